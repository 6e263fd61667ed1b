"""`batchline predict` as a newcomer runs it, against the real app: the pipeline it
sends to when ``--pipeline`` is not given.

The servers are the real one (:class:`tests.support.live_app.LiveApp`) with the
model-free ops of tests/support/client_fakes.py, named as a test needs: one
pipeline not called ``ocr`` (what ``batchline serve configs/ocr_ernie.yml`` runs),
several, several with ``ocr`` among them. Their ``GET /pipelines`` is the server's
own.
"""

import os
import subprocess
import sys
from typing import Any

import pytest
from PIL import Image

from client import cli as predict_cmd
from client.pipeline_client import PipelineClient
from client.protocols import GRPC_PROTOCOLS, PROTOCOLS
from serving.config import parse_config
from serving.config.repository_files import RepositoryConfig, repository_from
from tests.support.client_fakes import ocr_config, text_config
from tests.support.inference_fakes import v2_repository
from tests.support.live_app import LiveApp
from tests.support.server_process import ROOT

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


def _predict(argv):
    return predict_cmd.main(predict_cmd.build_parser().parse_args(argv))


def repository(*configs: tuple[str, dict[str, Any]]) -> RepositoryConfig:
    """Several pipelines in one server, each config as if read from its file."""
    return repository_from([file for file, _ in configs], [(f, parse_config(c, source=f)) for f, c in configs])


def batchline(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The ``batchline`` console entry point (``serving.cli``) in a child process."""
    full_env = {k: v for k, v in os.environ.items() if k != TOKEN_VAR}
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "serving.cli", "--log-level", "WARNING", *argv],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


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


# ----------------------------------------------------------------------------- the whole story


def test_batchline_predict_against_a_lone_pipeline_with_the_token_variable(live_app, image):
    live = live_app(ocr_config(name="ocr_ernie", auth_token="t0k"))
    run = batchline("predict", "--url", live.url, image, env={TOKEN_VAR: "t0k"})
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"== {image}\n120x40\t0.9900\n你好 world\t0.8750\n"
    assert run.stderr == "pipeline: ocr_ernie (the only one the server runs)\n"
