"""`batchline predict` as a newcomer runs it, against the real app: the pipeline it
sends to when ``--pipeline`` is not given, and what ``--draw`` says when no font
on the machine can draw the results' Chinese.

The servers are the real one (:class:`tests.support.live_app.LiveApp`) with the
model-free ops of tests/support/client_fakes.py, named as a test needs: one
pipeline not called ``ocr`` (what ``batchline serve configs/ocr_ernie.yml`` runs),
several, several with ``ocr`` among them. Their ``GET /pipelines`` is the server's
own. Fonts come from directories the test fills (``$BATCHLINE_FONT_DIRS``): no
font needs to be installed, and a CJK one is a tiny real TrueType file
(tests/support/cjk_font.py).
"""

import os
import subprocess
from typing import Any

import numpy as np
import pytest
from PIL import Image

from client import cli as predict_cmd
from client.draw import draw_ocr
from client.fonts import FONT_DIRS_ENV
from client.pipeline_client import PipelineClient
from client.protocols import GRPC_PROTOCOLS, PROTOCOLS
from serving.config import parse_config
from serving.config.file_set import RepositoryConfig, repository_from
from tests.support.cjk_font import write_cjk_font
from tests.support.client_fakes import ocr_config, ocr_lines, text_config
from tests.support.inference_fakes import v2_repository
from tests.support.live_app import LiveApp
from tests.support.server_process import run_batchline

SIZES = [(120, 40), (64, 32), (200, 50)]
TOKEN_VAR = "BATCHLINE_AUTH_TOKEN"


@pytest.fixture(autouse=True)
def no_token_in_env(monkeypatch):
    monkeypatch.delenv(TOKEN_VAR, raising=False)


@pytest.fixture(scope="module")
def lone():
    """One pipeline, ``ocr_ernie``, on HTTP and gRPC: what ``batchline serve configs/ocr_ernie.yml`` runs."""
    with LiveApp({**ocr_config(name="ocr_ernie"), "rpc_port": 0}) as live:
        yield live


@pytest.fixture
def image_dir(tmp_path):
    d = tmp_path / "imgs"
    d.mkdir()
    for i, (w, h) in enumerate(SIZES):
        Image.new("RGB", (w, h), (255, 255, 255)).save(d / f"img{i}.png")
    return d


@pytest.fixture
def image(image_dir):
    return str(image_dir / "img0.png")


@pytest.fixture
def font_dir(tmp_path, monkeypatch):
    """Font lookup pointed at an empty directory: a machine with no font package (DejaVu
    still comes from matplotlib); a test puts a CJK font there when it means one installed."""
    d = tmp_path / "fonts"
    d.mkdir()
    monkeypatch.setenv(FONT_DIRS_ENV, str(d))
    return d


def _predict(argv):
    return predict_cmd.main(predict_cmd.build_parser().parse_args(argv))


def repository(*configs: tuple[str, dict[str, Any]]) -> RepositoryConfig:
    """Several pipelines in one server, each config as if read from its file."""
    return repository_from([file for file, _ in configs], [(f, parse_config(c, source=f)) for f, c in configs])


def batchline(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The ``batchline`` console entry point (``serving.cli``) in a child process."""
    return run_batchline(*argv, env=env, unset=(TOKEN_VAR, FONT_DIRS_ENV))


# ----------------------------------------------------------------------------- which pipeline


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_without_pipeline_the_only_one_the_server_runs_gets_the_requests(lone, image, capsys, protocol):
    argv = ["--url", lone.url, "--protocol", protocol, image]
    if protocol in GRPC_PROTOCOLS:
        argv += ["--rpc-url", lone.rpc_address]
    rc = _predict(argv)
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert cap.out == f"== {image}\n120x40\t0.9900\n你好 world\t0.8750\n"
    assert "pipeline: ocr_ernie (the only one the server runs)" in cap.err


def test_a_named_pipeline_is_sent_as_named_and_the_listing_is_asked_once_only_when_none_is(
    lone, ocr, image_dir, image, capsys, monkeypatch
):
    asked = []
    listing = PipelineClient.pipelines

    def counted(self):
        asked.append(self.url)
        return listing(self)

    monkeypatch.setattr(PipelineClient, "pipelines", counted)
    assert _predict(["--url", lone.url, "--pipeline", "ocr_ernie", image]) == 0
    assert _predict(["--url", lone.url, "--pipeline", "ocr", image]) == 1  # named: no second guess
    err = capsys.readouterr().err
    assert "HTTP 404" in err and "ocr" in err
    assert asked == []
    assert _predict(["--url", lone.url, str(image_dir)]) == 0  # three images, one listing
    assert asked == [lone.url]
    assert capsys.readouterr().out.count("你好 world") == 3
    assert _predict(["--url", ocr.url, image]) == 0  # a server running ocr: ocr, without a note
    cap = capsys.readouterr()
    assert "120x40\t0.9900" in cap.out and "pipeline:" not in cap.err


def test_several_pipelines_none_named_ocr_is_an_error_that_names_them(live_app, image, capsys):
    live = live_app(repository(("receipts.yml", ocr_config(name="receipts")), ("ernie.yml", text_config())))
    rc = _predict(["--url", live.url, image])
    cap = capsys.readouterr()
    assert rc == 2 and cap.out == ""
    assert cap.err.count("\n") == 1 and cap.err.startswith("error: ")
    assert "none named 'ocr'" in cap.err and "ernie, receipts" in cap.err and "--pipeline NAME" in cap.err
    assert _predict(["--url", live.url, "--pipeline", "receipts", image]) == 0
    assert _predict(["--url", live.url, "--pipeline", "ernie", "--text", "good"]) == 0
    assert "receipts" not in capsys.readouterr().err


def test_several_pipelines_with_ocr_among_them_send_to_ocr(live_app, image, capsys):
    live = live_app(v2_repository())  # ocr v1, ernie v1 and v2
    with PipelineClient(live.url) as c:
        assert c.pipeline_names() == ["ernie", "ocr"]  # each pipeline once, whatever its versions
    assert _predict(["--url", live.url, image]) == 0
    cap = capsys.readouterr()
    assert cap.out == f"== {image}\n120x40\t0.9900\n你好 world\t0.8750\n" and cap.err == ""


def test_the_listing_is_asked_with_the_token(live_app, image, capsys):
    live = live_app(ocr_config(name="ocr_ernie", auth_token="t0k"))
    assert _predict(["--url", live.url, "--token", "t0k", image]) == 0
    assert "pipeline: ocr_ernie" in capsys.readouterr().err
    # a refused listing leaves the default: the prediction's own answer says what is wrong
    assert _predict(["--url", live.url, image]) == 1
    assert "HTTP 401" in capsys.readouterr().err


# ----------------------------------------------------------------------------- --draw's font


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


def _drawn_as(out_dir, font_path):
    """Whether every drawing in ``out_dir`` is what ``draw_ocr`` draws with ``font_path``."""
    for i, (w, h) in enumerate(SIZES):
        page = Image.new("RGB", (w, h), (255, 255, 255))
        expected = np.asarray(draw_ocr(page, ocr_lines(w, h), font_path=font_path))
        with Image.open(out_dir / f"img{i}.png") as saved:
            if not np.array_equal(np.asarray(saved.convert("RGB")), expected):
                return False
    return True


def test_draw_without_a_cjk_font_warns_once_with_the_fix(ocr, image_dir, tmp_path, font_dir, capsys):
    out = tmp_path / "vis"
    rc = _predict(["--url", ocr.url, "--draw", str(out), str(image_dir)])  # every result holds 你好
    cap = capsys.readouterr()
    assert rc == 0
    assert sorted(os.listdir(out)) == ["img0.png", "img1.png", "img2.png"]  # drawn all the same
    (warning,) = _warnings(cap.err)
    assert warning.startswith("warning: no CJK font found: ") and "no glyph for '你好'" in warning
    assert "DejaVuSans.ttf" in warning  # the font the text was drawn with instead
    assert "--font PATH" in warning and "apt-get install fonts-wqy-zenhei" in warning
    assert cap.err.index("drew") < cap.err.index("warning:")


def test_draw_uses_an_installed_cjk_font_and_says_nothing(ocr, image_dir, tmp_path, font_dir, capsys):
    installed = font_dir / "truetype" / "droid"  # where fonts-droid-fallback puts it
    installed.mkdir(parents=True)
    font = write_cjk_font(installed / "DroidSansFallbackFull.ttf")
    out = tmp_path / "vis"
    assert _predict(["--url", ocr.url, "--draw", str(out), str(image_dir)]) == 0
    assert _warnings(capsys.readouterr().err) == []
    assert _drawn_as(out, font)


def test_draw_with_font_draws_with_that_file(ocr, image_dir, tmp_path, font_dir, capsys):
    font = write_cjk_font(tmp_path / "mine.ttf")
    out = tmp_path / "vis"
    assert _predict(["--url", ocr.url, "--draw", str(out), "--font", font, str(image_dir)]) == 0
    assert _warnings(capsys.readouterr().err) == []
    assert _drawn_as(out, font)
    # a font without some of the characters: said once, naming the font and what it lacks
    partial = write_cjk_font(tmp_path / "partial.ttf", chars="你")
    assert _predict(["--url", ocr.url, "--draw", str(out), "--font", partial, str(image_dir)]) == 0
    (warning,) = _warnings(capsys.readouterr().err)
    assert f"the font used, {partial}, has no glyph for '好'" in warning and "no CJK font found" not in warning


def test_draw_with_a_font_that_cannot_be_read_is_a_usage_error(ocr, image, tmp_path, capsys):
    out = tmp_path / "vis"
    not_a_font = tmp_path / "notes.ttf"
    not_a_font.write_text("not a font")
    for path in (str(tmp_path / "missing.ttf"), str(not_a_font)):
        assert _predict(["--url", ocr.url, "--draw", str(out), "--font", path, image]) == 2
        cap = capsys.readouterr()
        assert cap.err.startswith(f"error: --font {path}: ") and cap.out == ""
    assert not out.exists()  # refused before anything was sent or drawn


# ----------------------------------------------------------------------------- the whole story


def test_batchline_predict_draw_against_a_lone_pipeline_on_a_machine_without_a_cjk_font(live_app, image, tmp_path):
    live = live_app(ocr_config(name="ocr_ernie", auth_token="t0k"))
    (tmp_path / "no-fonts").mkdir()
    out = tmp_path / "vis"
    env = {TOKEN_VAR: "t0k", FONT_DIRS_ENV: str(tmp_path / "no-fonts")}
    run = batchline("predict", "--url", live.url, "--draw", str(out), image, env=env)
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"== {image}\n120x40\t0.9900\n你好 world\t0.8750\n"
    assert "pipeline: ocr_ernie" in run.stderr and f"drew {out / 'img0.png'}" in run.stderr
    (warning,) = _warnings(run.stderr)
    assert "no CJK font found" in warning and "fonts-wqy-zenhei" in warning
