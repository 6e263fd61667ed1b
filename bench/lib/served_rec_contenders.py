"""The servers of the served-rec table: how each starts, what a request with
one crop looks like, and where the text is in its answer. All serve
configs/rec.yml's model (PP-OCRv4 rec, OpenVINO Runtime f32, one 1-thread
instance per core) with the project's own rec pre/post-processing."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass

from bench.lib.configs import repo_config_path
from bench.lib.http_load import HttpRequest
from bench.lib.venvs import VenvSpec

WORKERS = 2  # one model instance per core of this machine
BATCH_WAIT_MS = 5  # mosec's max_wait_time with dynamic batching: configs/rec.yml's max_queue_delay
#: mosec that also sees this interpreter's packages: the project's ops, OpenVINO, numpy, OpenCV
MOSEC_REC = VenvSpec("mosec-rec", (("mosec", "0.9.8"),), ("mosec==0.9.8",), system_site=True)


def _doc(body: bytes) -> object:
    try:
        return json.loads(body)
    except ValueError:
        return None


def native_text(body: bytes) -> str | None:
    """The text of ``{"results": [{"text", "score"}]}`` (batchline's ``/predict``)."""
    doc = _doc(body)
    try:
        return str(doc["results"][0]["text"])  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        return None


def paddle_text(body: bytes) -> str | None:
    """The text of Paddle Serving's ``{"err_no": 0, "value": ["{\\"text\\": ...}"]}``."""
    doc = _doc(body)
    try:
        if doc["err_no"] != 0:  # type: ignore[index]
            return None
        value = doc["value"][0]  # type: ignore[index]
        return str((json.loads(value) if isinstance(value, str) else value)["text"])
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def plain_text(body: bytes) -> str | None:
    """The text of ``{"text", "score"}`` (the mosec peer)."""
    doc = _doc(body)
    try:
        return str(doc["text"])  # type: ignore[index]
    except (KeyError, TypeError):
        return None


def _answers(pick: Callable[[bytes], str | None]) -> Callable[[bytes], bool]:
    return lambda body: pick(body) is not None


def native_request(png: bytes) -> HttpRequest:
    """The binary upload: the PNG as the body, no JSON, no base64."""
    return HttpRequest("/rec/predict", png, "image/png", check=_answers(native_text))


def paddle_request(png: bytes) -> HttpRequest:
    body = json.dumps({"key": ["image"], "value": [base64.b64encode(png).decode("ascii")]}).encode()
    return HttpRequest("/rec/prediction", body, check=_answers(paddle_text))


def mosec_request(png: bytes) -> HttpRequest:
    return HttpRequest("/inference", png, "image/png", check=_answers(plain_text))


@dataclass(frozen=True)
class Contender:
    """``argv(python, port)``: the command that serves on ``port``; ``venv``: the
    environment whose python runs it (None: this one); ``request(png)``: one
    crop's request; ``text``: the text of an answer body (None: not an answer)."""

    key: str
    title: str
    argv: Callable[[str, int], list[str]]
    request: Callable[[bytes], HttpRequest]
    text: Callable[[bytes], str | None]
    venv: VenvSpec | None = None
    note: str = ""
    ready_timeout: float = 180.0
    revision: str = ""  # served from a worktree of this revision (``--base``); "": this checkout


def _batchline(python: str, port: int) -> list[str]:
    config = repo_config_path("rec")
    return [python, "-m", "serving.cli", "serve", config, "--host", "127.0.0.1", "--port", str(port)]


def _mosec(max_batch: int) -> Callable[[str, int], list[str]]:
    def argv(python: str, port: int) -> list[str]:
        return [
            python,
            *("-m", "bench.peers.rec_mosec", "--port", str(port), "--workers", str(WORKERS)),
            *("--max-batch", str(max_batch), "--wait-ms", str(BATCH_WAIT_MS)),
            # mosec drops a request after 3 s by default: 32 clients queue longer on a slow CPU
            *("--timeout", "60000"),
        ]

    return argv


def base_contender(revision: str) -> Contender:
    """``batchline serve configs/rec.yml`` as ``revision`` had it (``--base``), the native binary upload."""
    return Contender(
        "batchline_base",
        f"batchline at {revision}, native binary (the same request)",
        _batchline,
        native_request,
        native_text,
        revision=revision,
    )


def contenders() -> list[Contender]:
    return [
        Contender(
            "batchline",
            "batchline `configs/rec.yml`, native binary (`POST /rec/predict`, image/png)",
            _batchline,
            native_request,
            native_text,
        ),
        Contender(
            "batchline_paddle",
            "batchline `configs/rec.yml`, Paddle JSON (`/rec/prediction`, base64)",
            _batchline,
            paddle_request,
            paddle_text,
        ),
        Contender(
            "mosec_b1",
            "mosec 0.9.8, max batch 1",
            _mosec(1),
            mosec_request,
            plain_text,
            MOSEC_REC,
            note=f"Preprocess x1, Inference x{WORKERS}",
        ),
        Contender(
            "mosec_b32",
            f"mosec 0.9.8, dynamic batching, max batch 32 ({BATCH_WAIT_MS} ms wait)",
            _mosec(32),
            mosec_request,
            plain_text,
            MOSEC_REC,
            note=f"Preprocess x1, Inference x{WORKERS}",
        ),
    ]


#: not run: why, in the table's words
COULD_NOT_RUN = {
    "pytriton_b1": (
        "Triton (PyTriton), max batch 1",
        "Triton's server does not start on this machine (docs/BENCHMARKS.md, null op)",
    ),
    "pytriton_b32": (
        "Triton (PyTriton), dynamic batching, max batch 32",
        "Triton's server does not start on this machine (docs/BENCHMARKS.md, null op)",
    ),
}
