"""Font files for writing text on images: one lookup for the client's drawings
and the tests' rendered pages.

:func:`find_font` searches the system font directories (or those named in
``$BATCHLINE_FONT_DIRS``, ``os.pathsep``-separated) for a kind of font:

  "en"       a Latin sans (DejaVu Sans)
  "en_bold"  its bold face
  "zh"       a CJK-capable font: a known file (WenQuanYi Zen/Micro Hei, Noto Sans/Serif
             CJK, Source Han Sans, Droid Sans Fallback, AR PL UMing/UKai, and the
             Chinese fonts macOS and Windows ship) in the font directories, else any
             font fontconfig says covers Chinese (``fc-list :lang=zh``)
  "any"      "zh" when one is installed (so Chinese stays legible), else "en"

Names are tried in order of preference whatever the directory they lie in. Setting
``$BATCHLINE_FONT_DIRS`` replaces the whole system search, fontconfig included, so
a test sees exactly the fonts it put there.

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
import subprocess
from functools import lru_cache

FONT_DIRS_ENV = "BATCHLINE_FONT_DIRS"
SYSTEM_FONT_DIRS = (
    "/usr/share/fonts",
    "/usr/local/share/fonts",
    "~/.local/share/fonts",
    "~/.fonts",
    "/System/Library/Fonts",  # macOS
    "/Library/Fonts",
    "~/Library/Fonts",
)

# file names per kind, preferred first
FONT_FILES = {
    "en": ("DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf"),
    "en_bold": ("DejaVuSans-Bold.ttf",),
    "zh": (
        "wqy-zenhei.ttc",  # fonts-wqy-zenhei
        "wqy-microhei.ttc",  # fonts-wqy-microhei
        "NotoSansCJK-Regular.ttc",  # fonts-noto-cjk, google-noto-sans-cjk-ttc-fonts, noto-fonts-cjk
        "NotoSansCJKsc-Regular.otf",
        "NotoSerifCJK-Regular.ttc",
        "SourceHanSans-Regular.ttc",
        "SourceHanSansSC-Regular.otf",
        "DroidSansFallbackFull.ttf",  # fonts-droid-fallback
        "uming.ttc",  # fonts-arphic-uming
        "ukai.ttc",  # fonts-arphic-ukai
        "PingFang.ttc",  # macOS
        "Hiragino Sans GB.ttc",
        "STHeiti Light.ttc",
        "msyh.ttc",  # Windows: Microsoft YaHei, SimHei, SimSun
        "simhei.ttf",
        "simsun.ttc",
    ),
}
# the languages fontconfig is asked about per kind, when no known file is found
_FONTCONFIG_LANGS = {"zh": "zh"}
FC_LIST_TIMEOUT_S = 5.0
# kinds matplotlib's bundled DejaVu can stand in for
_BUNDLED_KINDS = ("en", "en_bold")


def font_dirs() -> tuple[str, ...]:
    """Directories searched, in order: ``$BATCHLINE_FONT_DIRS`` when set (even to ""), else the system's."""
    env = os.environ.get(FONT_DIRS_ENV)
    if env is not None:
        dirs = tuple(d for d in env.split(os.pathsep) if d)
    else:
        windows = os.environ.get("WINDIR")
        dirs = SYSTEM_FONT_DIRS + ((os.path.join(windows, "Fonts"),) if windows else ())
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
    """The first of ``names`` (in their order of preference) found under ``dirs``; among
    copies of one name, the first directory's (each walked in sorted order)."""
    found: dict[str, str] = {}
    for root in dirs:
        if not os.path.isdir(root):
            continue
        for dirpath, subdirs, files in os.walk(root):
            subdirs.sort()  # the same file wins on every run, whatever the directory order
            for name in names:
                if name in files:
                    found.setdefault(name, os.path.join(dirpath, name))
            if names[0] in found:
                return found[names[0]]  # the preferred one: nothing can beat it
    return next((found[name] for name in names if name in found), None)


@lru_cache(maxsize=8)
def fontconfig_font(lang: str) -> str | None:
    """A font file fontconfig says covers ``lang`` (``fc-list :lang=LANG``), a regular face
    first; None without fontconfig or when no installed font covers it. (``fc-match`` is
    no use here: it always answers, with DejaVu when nothing covers the language.)"""
    try:
        listed = subprocess.run(
            ["fc-list", "--format", "%{file}\t%{style}\n", f":lang={lang}"],
            capture_output=True,
            text=True,
            timeout=FC_LIST_TIMEOUT_S,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    faces = []
    for line in listed.splitlines():
        path, _, style = line.partition("\t")
        if path and os.path.isfile(path):
            faces.append(("regular" not in style.lower(), path))
    return min(faces)[1] if faces else None


def find_font(kind: str = "en") -> str | None:
    """Path of a font file for ``kind`` ("en", "en_bold", "zh", "any"), or None if there is none."""
    if kind == "any":
        return find_font("zh") or find_font("en")
    if kind not in FONT_FILES:
        raise ValueError(f"unknown font kind {kind!r}; expected one of {sorted(FONT_FILES) + ['any']}")
    names = FONT_FILES[kind]
    found = _search(font_dirs(), names)
    if found is None and kind in _FONTCONFIG_LANGS and os.environ.get(FONT_DIRS_ENV) is None:
        found = fontconfig_font(_FONTCONFIG_LANGS[kind])
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
