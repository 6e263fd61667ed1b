"""Font files for writing text on images: one lookup for the client's drawings
and the tests' rendered pages.

:func:`find_font` searches the system font directories (or those named in
``$BATCHLINE_FONT_DIRS``, ``os.pathsep``-separated) for a kind of font:

  "en"       a Latin sans (DejaVu Sans)
  "en_bold"  its bold face
  "zh"       a CJK-capable font (WenQuanYi Zen/Micro Hei, Noto Sans CJK)
  "any"      "zh" when one is installed (so Chinese stays legible), else "en"

:func:`find_font_file` finds one font file by name (the evaluation page set
picks among many faces).

A fresh machine may have no system font at all, so the Latin kinds fall back
to the DejaVu files that matplotlib bundles, when matplotlib is installed (it
is in the ``test`` and ``bench`` extras). Nothing here imports matplotlib: its
package directory is located without running it.
"""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache

FONT_DIRS_ENV = "BATCHLINE_FONT_DIRS"
SYSTEM_FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts", "~/.local/share/fonts", "~/.fonts")

# file names per kind, preferred first
FONT_FILES = {
    "en": ("DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf"),
    "en_bold": ("DejaVuSans-Bold.ttf",),
    "zh": ("wqy-zenhei.ttc", "wqy-microhei.ttc", "NotoSansCJK-Regular.ttc"),
}
# kinds matplotlib's bundled DejaVu can stand in for
_BUNDLED_KINDS = ("en", "en_bold")


def font_dirs() -> tuple[str, ...]:
    """Directories searched, in order: ``$BATCHLINE_FONT_DIRS`` when set (even to ""), else the system's."""
    env = os.environ.get(FONT_DIRS_ENV)
    dirs = SYSTEM_FONT_DIRS if env is None else tuple(d for d in env.split(os.pathsep) if d)
    return tuple(os.path.expanduser(d) for d in dirs)


def bundled_font_dir() -> str | None:
    """matplotlib's bundled TrueType directory (``mpl-data/fonts/ttf``), or None without matplotlib."""
    try:
        spec = importlib.util.find_spec("matplotlib")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "mpl-data", "fonts", "ttf")
    return path if os.path.isdir(path) else None


# cached per (directories, names): changing $BATCHLINE_FONT_DIRS gives a new search
@lru_cache(maxsize=32)
def _search(dirs: tuple[str, ...], names: tuple[str, ...]) -> str | None:
    for root in dirs:
        if not os.path.isdir(root):
            continue
        for dirpath, subdirs, files in os.walk(root):
            subdirs.sort()  # the same file wins on every run, whatever the directory order
            for name in names:
                if name in files:
                    return os.path.join(dirpath, name)
    return None


def find_font(kind: str = "en") -> str | None:
    """Path of a font file for ``kind`` ("en", "en_bold", "zh", "any"), or None if there is none."""
    if kind == "any":
        return find_font("zh") or find_font("en")
    if kind not in FONT_FILES:
        raise ValueError(f"unknown font kind {kind!r}; expected one of {sorted(FONT_FILES) + ['any']}")
    names = FONT_FILES[kind]
    found = _search(font_dirs(), names)
    if found is None and kind in _BUNDLED_KINDS:
        bundled = bundled_font_dir()
        if bundled is not None:
            found = _search((bundled,), names)
    return found


def find_font_file(name: str) -> str | None:
    """Path of one font file by its file name (e.g. "DejaVuSerif.ttf"): the searched
    directories first, then matplotlib's bundled copy (DejaVu only); None if absent."""
    found = _search(font_dirs(), (name,))
    if found is None:
        bundled = bundled_font_dir()
        if bundled is not None:
            found = _search((bundled,), (name,))
    return found


def has_chinese_font() -> bool:
    return find_font("zh") is not None
