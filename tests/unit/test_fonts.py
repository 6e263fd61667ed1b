"""client.fonts: the one font lookup (client drawings and test rendering), and
its fallback to matplotlib's bundled DejaVu on a machine with no font installed."""

import os

import pytest

from client import fonts
from client.fonts import FONT_DIRS_ENV, bundled_font_dir, find_font


@pytest.fixture
def no_system_fonts(tmp_path, monkeypatch):
    """Font lookup pointed at an empty directory: a fresh machine with no font package."""
    empty = tmp_path / "no-fonts"
    empty.mkdir()
    monkeypatch.setenv(FONT_DIRS_ENV, str(empty))
    return empty


def test_the_environment_variable_replaces_the_system_directories(tmp_path, monkeypatch):
    (tmp_path / "a" / "deep").mkdir(parents=True)
    (tmp_path / "a" / "deep" / "wqy-zenhei.ttc").write_bytes(b"")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "DejaVuSans.ttf").write_bytes(b"")
    monkeypatch.setenv(FONT_DIRS_ENV, os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")]))
    assert fonts.font_dirs() == (str(tmp_path / "a"), str(tmp_path / "b"))
    assert find_font("zh") == str(tmp_path / "a" / "deep" / "wqy-zenhei.ttc")
    assert find_font("en") == str(tmp_path / "b" / "DejaVuSans.ttf")
    assert find_font("any") == find_font("zh")  # CJK first: Chinese results stay legible
    assert fonts.has_chinese_font()


def test_latin_falls_back_to_matplotlibs_dejavu_and_chinese_to_none(no_system_fonts):
    bundled = bundled_font_dir()
    assert bundled is not None, "matplotlib is in the test extra"
    assert find_font("en") == os.path.join(bundled, "DejaVuSans.ttf")
    assert find_font("en_bold") == os.path.join(bundled, "DejaVuSans-Bold.ttf")
    assert find_font("zh") is None and not fonts.has_chinese_font()
    assert find_font("any") == find_font("en")


def test_without_matplotlib_there_is_no_font_and_drawing_uses_pils_default(no_system_fonts, monkeypatch):
    from PIL import Image

    from client.draw import draw_ocr, load_font

    monkeypatch.setattr(fonts, "bundled_font_dir", lambda: None)
    assert find_font("en") is None and find_font("any") is None
    assert load_font(20) is not None  # PIL's built-in font
    box = [[2, 2], [60, 2], [60, 20], [2, 20]]
    out = draw_ocr(Image.new("RGB", (80, 30), "white"), [{"text": "hi 你好", "score": 0.9, "box": box}])
    assert out.size == (160, 30)


def test_drawing_uses_a_truetype_font_with_no_system_font(no_system_fonts):
    from PIL import Image, ImageFont

    from client.draw import draw_ocr, load_font

    assert isinstance(load_font(20), ImageFont.FreeTypeFont)
    box = [[2, 2], [60, 2], [60, 20], [2, 20]]
    out = draw_ocr(Image.new("RGB", (80, 30), "white"), [{"text": "hello", "score": 0.9, "box": box}])
    right = out.crop((80, 0, 160, 30)).convert("L")
    assert right.getextrema()[0] < 128  # the text was written


def test_unknown_kind_is_an_error():
    with pytest.raises(ValueError, match="unknown font kind"):
        find_font("klingon")


def test_a_font_file_is_found_by_name_and_latin_ones_fall_back_to_matplotlib(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "DejaVuSerif-Italic.ttf").write_bytes(b"")
    monkeypatch.setenv(FONT_DIRS_ENV, str(tmp_path))
    assert fonts.find_font_file("DejaVuSerif-Italic.ttf") == str(tmp_path / "sub" / "DejaVuSerif-Italic.ttf")
    assert fonts.find_font_file("DejaVuSansMono.ttf") == os.path.join(bundled_font_dir(), "DejaVuSansMono.ttf")
    assert fonts.find_font_file("wqy-zenhei.ttc") is None


# ----------------------------------------------------------------------------- CJK fonts


@pytest.fixture
def fonts_only_in(tmp_path, monkeypatch):
    """The system search pointed at one empty directory, fontconfig's cache cleared: a test
    adds the font files (and an ``fc-list``) it means the machine to have."""
    system = tmp_path / "system-fonts"
    system.mkdir()
    monkeypatch.delenv(FONT_DIRS_ENV, raising=False)
    monkeypatch.delenv("WINDIR", raising=False)
    monkeypatch.setattr(fonts, "SYSTEM_FONT_DIRS", (str(system),))
    fonts.fontconfig_font.cache_clear()
    yield system
    fonts.fontconfig_font.cache_clear()


def fake_fc_list(bin_dir, monkeypatch, answer: str) -> str:
    """An ``fc-list`` first on PATH that prints ``answer`` and records that it was asked."""
    bin_dir.mkdir(exist_ok=True)
    asked = bin_dir / "asked"
    script = bin_dir / "fc-list"
    script.write_text(f"#!/bin/sh\necho \"$@\" >> '{asked}'\nprintf '%s' '{answer}'\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return str(asked)


def test_the_preferred_cjk_font_wins_whatever_directory_it_lies_in(tmp_path, monkeypatch):
    for sub, name in (("opentype/noto", "NotoSansCJK-Regular.ttc"), ("truetype/wqy", "wqy-zenhei.ttc")):
        (tmp_path / sub).mkdir(parents=True)
        (tmp_path / sub / name).write_bytes(b"")
    monkeypatch.setenv(FONT_DIRS_ENV, str(tmp_path))
    # opentype/ is walked first; WenQuanYi Zen Hei is still the one preferred (the tests' pages use it)
    assert find_font("zh") == str(tmp_path / "truetype" / "wqy" / "wqy-zenhei.ttc")


@pytest.mark.parametrize(
    "name", ["DroidSansFallbackFull.ttf", "uming.ttc", "NotoSerifCJK-Regular.ttc", "msyh.ttc", "PingFang.ttc"]
)
def test_other_common_cjk_fonts_are_found(tmp_path, monkeypatch, name):
    (tmp_path / "fonts").mkdir()
    (tmp_path / "fonts" / name).write_bytes(b"")
    monkeypatch.setenv(FONT_DIRS_ENV, str(tmp_path))
    assert find_font("zh") == str(tmp_path / "fonts" / name)
    assert find_font("any") == find_font("zh")


def test_fontconfig_finds_a_cjk_font_of_no_known_name(fonts_only_in, tmp_path, monkeypatch):
    bold = tmp_path / "elsewhere" / "SomeHei-Bold.otf"
    regular = tmp_path / "elsewhere" / "SomeHei-Regular.otf"
    bold.parent.mkdir()
    bold.write_bytes(b"")
    regular.write_bytes(b"")
    listing = f"{bold}\tBold\n{tmp_path / 'gone.ttf'}\tRegular\n{regular}\tRegular,Normal\n"
    asked = fake_fc_list(tmp_path / "bin", monkeypatch, listing)
    assert find_font("zh") == str(regular)  # a regular face first; a listed file that is gone is skipped
    with open(asked) as f:
        assert ":lang=zh" in f.read()


def test_fontconfig_is_not_asked_when_a_known_file_is_there_or_the_directories_are_given(
    fonts_only_in, tmp_path, monkeypatch
):
    asked = fake_fc_list(tmp_path / "bin", monkeypatch, f"{tmp_path / 'x.otf'}\tRegular\n")
    (fonts_only_in / "wqy-microhei.ttc").write_bytes(b"")
    assert find_font("zh") == str(fonts_only_in / "wqy-microhei.ttc")
    monkeypatch.setenv(FONT_DIRS_ENV, str(tmp_path / "nothing-here"))
    assert find_font("zh") is None
    assert not os.path.exists(asked)


def test_no_cjk_font_without_fontconfig_or_when_it_lists_none(fonts_only_in, tmp_path, monkeypatch):
    fake_fc_list(tmp_path / "bin", monkeypatch, "")
    assert find_font("zh") is None
    fonts.fontconfig_font.cache_clear()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no fc-list at all
    assert find_font("zh") is None


def test_missing_glyphs_names_the_cjk_characters_a_font_draws_as_boxes(no_system_fonts, tmp_path):
    from client.draw import is_cjk, missing_glyphs
    from tests.support.cjk_font import write_cjk_font

    assert [is_cjk(ch) for ch in "你ａ：。かa é"] == [True, True, True, True, True, False, False, False]
    # no CJK font: matplotlib's DejaVu, which has Latin but no Chinese
    assert missing_glyphs(["你好 world", "：abc 你"]) == "你好："
    assert missing_glyphs(["hello", "é"]) == ""
    assert missing_glyphs(["一二三四五六七八九十"], limit=3) == "一二三"
    cjk = write_cjk_font(tmp_path / "cjk.ttf")  # glyphs for 你 and 好 only
    assert missing_glyphs(["你好 world"], cjk) == ""
    assert missing_glyphs(["你好吗"], cjk) == "吗"


def test_drawing_with_a_cjk_font_draws_what_dejavu_draws_as_boxes(no_system_fonts, tmp_path):
    import numpy as np
    from PIL import Image

    from client.draw import draw_ocr
    from tests.support.cjk_font import write_cjk_font

    item = {"text": "你好", "score": 0.9, "box": [[0, 0], [79, 0], [79, 29], [0, 29]]}
    page = Image.new("RGB", (80, 30), "white")
    cjk = write_cjk_font(tmp_path / "cjk.ttf")
    with_cjk = draw_ocr(page, [item], font_path=cjk).crop((81, 1, 159, 29)).convert("L")
    with_dejavu = draw_ocr(page, [item]).crop((81, 1, 159, 29)).convert("L")
    # the test font's glyphs are filled squares, DejaVu's missing glyph an outline: far more ink
    assert (np.asarray(with_cjk) < 128).sum() > 4 * (np.asarray(with_dejavu) < 128).sum()
