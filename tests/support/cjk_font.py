"""A tiny real TrueType font with glyphs for a few Chinese characters, built with
fontTools (matplotlib's dependency, so in the test extra): what the client's font
lookup and drawing are tested with, on a machine with no CJK font installed.

Each character it has is a filled square; its missing glyph (``.notdef``), what
every other character renders as, is empty. PIL and FreeType read it as they read
WenQuanYi's or Noto's files.
"""

from __future__ import annotations

import os

from fontTools.fontBuilder import FontBuilder
from fontTools.pens.ttGlyphPen import TTGlyphPen

UNITS = 1000
CHARS = "你好"  # the Chinese text of the model-free OCR pipeline's lines (tests/support/client_fakes.py)


def _square() -> object:
    pen = TTGlyphPen(None)
    pen.moveTo((100, 0))
    pen.lineTo((100, 800))
    pen.lineTo((900, 800))
    pen.lineTo((900, 0))
    pen.closePath()
    return pen.glyph()


def write_cjk_font(path: str | os.PathLike[str], chars: str = CHARS) -> str:
    """Write the font, with glyphs for ``chars`` only, to ``path``; return the path."""
    names = {ch: f"uni{ord(ch):04X}" for ch in dict.fromkeys(chars)}
    order = [".notdef", *names.values()]
    builder = FontBuilder(UNITS, isTTF=True)
    builder.setupGlyphOrder(order)
    builder.setupCharacterMap({ord(ch): name for ch, name in names.items()})
    builder.setupGlyf({".notdef": TTGlyphPen(None).glyph(), **{name: _square() for name in names.values()}})
    builder.setupHorizontalMetrics({name: (UNITS, 0) for name in order})
    builder.setupHorizontalHeader(ascent=880, descent=-120)
    builder.setupNameTable({"familyName": "Batchline Test CJK", "styleName": "Regular"})
    builder.setupOS2(sTypoAscender=880, sTypoDescender=-120, usWinAscent=880, usWinDescent=120)
    builder.setupPost()
    builder.save(str(path))
    return str(path)
