"""The servers of the null-op table: how each starts (its command, in which
environment), what a request to it looks like, and how its answer is checked.
Every one serves "text in, its length out" with the same text."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from bench.lib.http_load import HttpRequest
from bench.lib.venvs import VenvSpec

TEXT = "the quick brown fox jumps over the lazy dog"
WORKERS = 2  # one worker process (or model instance) per core of this machine


def _length_in(body: bytes, pick: Callable[[dict], object]) -> bool:
    try:
        return pick(json.loads(body)) == len(TEXT)
    except (ValueError, KeyError, IndexError, TypeError):
        return False


def batchline_request() -> HttpRequest:
    body = json.dumps({"key": ["text"], "value": [TEXT]}).encode()
    return HttpRequest("/null/prediction", body, check=lambda b: _length_in(b, _batchline_length))


def native_request() -> HttpRequest:
    """The same text to the native route (``POST /null/predict``)."""
    body = json.dumps({"inputs": [{"text": TEXT}]}).encode()
    return HttpRequest("/null/predict", body, check=lambda b: _length_in(b, lambda d: d["results"][0]["length"]))


def _batchline_length(doc: dict) -> object:
    value = doc["value"][0]
    return (json.loads(value) if isinstance(value, str) else value)["length"]


def plain_request(path: str) -> HttpRequest:
    body = json.dumps({"text": TEXT}).encode()
    return HttpRequest(path, body, check=lambda b: _length_in(b, lambda d: d["length"]))


def triton_request() -> HttpRequest:
    doc = {"inputs": [{"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": [TEXT]}]}
    return HttpRequest("/v2/models/null/infer", json.dumps(doc).encode(), check=lambda b: _length_in(b, _triton_length))


def _triton_length(doc: dict) -> object:
    (output,) = [o for o in doc["outputs"] if o["name"] == "length"]
    return output["data"][0]


MOSEC = VenvSpec("mosec", (("mosec", "0.9.8"),), ("mosec==0.9.8",))
PYTRITON = VenvSpec("pytriton", (("nvidia-pytriton", "0.7.0"),), ("nvidia-pytriton==0.7.0",))
LITSERVE = VenvSpec("litserve", (("litserve", "0.2.19"),), ("litserve==0.2.19",))
RAYSERVE = VenvSpec("rayserve", (("ray", "2.60.0"),), ("ray[serve]==2.60.0",))
# the project's packages plus granian: it serves batchline's own app
GRANIAN = VenvSpec("granian", (("granian", "2.8.9"),), ("granian==2.8.9",), system_site=True)
SPECS = (MOSEC, PYTRITON, LITSERVE, RAYSERVE, GRANIAN)


@dataclass(frozen=True)
class Contender:
    """``argv(python, port, config_dir)``: the command that serves on ``port``;
    ``venv``: the environment whose python runs it (None: this one)."""

    key: str
    title: str
    argv: Callable[[str, int, str], list[str]]
    request: HttpRequest
    venv: VenvSpec | None = None
    batching: bool = True
    note: str = ""
    ready_timeout: float = 180.0
    revision: str | None = None  # served from this revision's checkout (None: this tree)


def _module(name: str, *extra: str) -> Callable[[str, int, str], list[str]]:
    return lambda python, port, _cfg: [python, "-m", f"bench.peers.{name}", "--port", str(port), *extra]


def _batchline(front_workers: int | None, front: str | None = None) -> Callable[[str, int, str], list[str]]:
    """``front_workers`` None: no such option (a revision from before it); ``front``: ``http.front``."""

    def argv(python: str, port: int, config_dir: str) -> list[str]:
        from bench.lib.null_op import write_null_config

        path = write_null_config(config_dir, instances=WORKERS, front=front)
        serve = [python, "-m", "serving.cli", "serve", path, "--host", "127.0.0.1", "--port", str(port)]
        return serve if front_workers is None else [*serve, "--front-workers", str(front_workers)]

    return argv


def base_contenders(revision: str, fronts: bool) -> list[Contender]:
    """``batchline serve`` as ``revision`` had it (``--base``): the same null op, its own server;
    ``fronts``: also with front processes, on the Paddle and the native route (a revision
    that has ``--front-workers``)."""
    base = [
        Contender(
            "batchline_base",
            f"batchline at {revision} (`batchline serve`: one process)",
            _batchline(None),
            batchline_request(),
            note=f"one process, instance_num {WORKERS}",
            revision=revision,
        )
    ]
    if fronts:
        base += [
            Contender(
                f"batchline_base_fronts{route}",
                f"batchline at {revision}, `--front-workers {WORKERS}`, {what}",
                _batchline(WORKERS),
                request,
                note="front processes, one engine",
                revision=revision,
            )
            for route, what, request in (
                ("", "Paddle route", batchline_request()),
                ("_native", "native route", native_request()),
            )
        ]
    return base


def _granian(workers: int) -> Callable[[str, int, str], list[str]]:
    def argv(python: str, port: int, _cfg: str) -> list[str]:
        granian = os.path.join(os.path.dirname(python), "granian")
        return [
            granian,
            "--interface",
            "wsgi",
            "--factory",
            "--workers",
            str(workers),
            # a request blocks its thread while the batcher waits: threads for all 64 clients
            "--blocking-threads",
            "64",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-ws",
            "--log-level",
            "warning",
            "bench.peers.null_granian_app:app",
        ]

    return argv


def contenders() -> list[Contender]:
    w = str(WORKERS)
    return [
        Contender(
            "batchline",
            "batchline (`batchline serve`: one process, the asyncio front)",
            _batchline(0),
            batchline_request(),
            note=f"one process, instance_num {WORKERS}",
        ),
        Contender(
            "batchline_fronts_native",
            f"batchline, `--front-workers {WORKERS}`, the native route (`POST /null/predict`)",
            _batchline(WORKERS),
            native_request(),
            note="front processes, one engine",
        ),
        Contender(
            "batchline_fronts",
            f"batchline, `--front-workers {WORKERS}` (front processes, one engine)",
            _batchline(WORKERS),
            batchline_request(),
            note=f"{WORKERS} front processes on the asyncio front, one engine process and batcher",
        ),
        Contender(
            "flask_waitress",
            "plain Flask + waitress, no batching (our stack's floor)",
            _module("null_flask"),
            plain_request("/null"),
            batching=False,
        ),
        Contender(
            "mosec",
            "mosec (Rust front, Python workers)",
            _module("null_mosec", "--workers", w),
            plain_request("/inference"),
            MOSEC,
        ),
        Contender(
            "pytriton",
            "Triton via PyTriton (C++ front, KServe v2 JSON)",
            _module("null_pytriton", "--workers", w),
            triton_request(),
            PYTRITON,
        ),
        Contender(
            "litserve", "LitServe", _module("null_litserve", "--workers", w), plain_request("/predict"), LITSERVE
        ),
        Contender(
            "rayserve",
            "Ray Serve (`@serve.batch`)",
            _module("null_rayserve", "--workers", w),
            plain_request("/"),
            RAYSERVE,
            ready_timeout=240.0,
        ),
        Contender(
            "granian_1",
            "batchline's app on granian, 1 worker",
            _granian(1),
            batchline_request(),
            GRANIAN,
            note="one engine and batcher",
        ),
        Contender(
            "granian_2",
            "batchline's app on granian, 2 workers",
            _granian(2),
            batchline_request(),
            GRANIAN,
            note="two processes: an engine and a batcher each",
        ),
    ]


def this_python() -> str:
    return sys.executable
