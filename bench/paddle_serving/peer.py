"""The same Paddle Serving service, served by the real Paddle Serving 0.9 and by batchline:
its ``web_service.py`` and ``config.yml`` unchanged (tests/data/paddle_serving/cases), one
machine, one run, the two servers taking turns (``--rounds``). Each serves the OCR case's
images over HTTP, cycled: first one client (p50 latency), then ``--clients`` closed-loop
clients (throughput). Every answer must have ``err_no`` 0, and the first pass over the
images must give the same answers from both (text and boxes; scores within 1e-4).

``--config official`` uses Paddle Serving's example config as published (det 6 / rec 3 process
workers, ``thread_num`` 2 each) instead of the case's (1 / 1).

Target (issue 36): batchline >= 1.5x Paddle Serving's throughput at 8 clients, and no worse
p50 at 1 client.

    python -m bench.paddle_serving.peer [--case ocr] [--clients 8] [--duration 20] [--rounds 2]
"""

from __future__ import annotations

import argparse
import base64
import glob
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
from typing import Any

import requests
import yaml

from bench.lib.http_load import HttpRequest, latency_summary_ms, rotating_closed_loop
from bench.lib.paths import ROOT, cache_dir
from bench.lib.script import BenchError, run_main
from tests.support.paddle_serving import replay
from tests.support.paddle_serving.cases import CASES, prepare_case
from tests.support.server_process import ServerProcess

IMAGES = sorted(glob.glob(os.path.join(ROOT, "tests/data/ocr/*/*.png")))
OFFICIAL = {"det": 6, "rec": 3}  # Paddle Serving's examples/Pipeline/PaddleOCR/ocr/config.yml
SCORE_TOL = 1e-4


def _ok(body: bytes) -> bool:
    try:
        return json.loads(body).get("err_no") == 0
    except ValueError:
        return False


def _requests(path: str) -> list[HttpRequest]:
    out = []
    for image in IMAGES:
        with open(image, "rb") as f:
            value = base64.b64encode(f.read()).decode()
        out.append(HttpRequest(path, json.dumps({"key": ["image"], "value": [value]}).encode(), check=_ok))
    return out


def _official(case_dir: str) -> None:
    path = os.path.join(case_dir, "config.yml")
    with open(path, encoding="utf-8") as f:
        conf = yaml.safe_load(f)
    for op, workers in OFFICIAL.items():
        conf["op"][op]["concurrency"] = workers
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(conf, f)


class RealPaddleServing:
    """The case folder's entry script run by the reference venv's python (its process group)."""

    def __init__(self, python: str, case_dir: str, entry: str, http_port: int, path: str):
        self.log_path = os.path.join(cache_dir("logs"), "paddle-serving-peer.log")
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - written by the server until stop()
        self.proc = subprocess.Popen(
            [python, entry], cwd=case_dir, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.url = f"http://127.0.0.1:{http_port}"
        self.port = http_port
        self.path = path

    def wait_ready(self, body: bytes, timeout: float = 300.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise BenchError(f"Paddle Serving exited with {self.proc.returncode}; log {self.log_path}")
            try:
                if requests.post(self.url + self.path, data=body, timeout=60).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(1)
        raise BenchError(f"Paddle Serving not ready after {timeout}s; log {self.log_path}")

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._log.close()


def _first_answers(url: str, reqs: list[HttpRequest]) -> list[dict]:
    return [requests.post(url + r.path, data=r.body, timeout=120).json() for r in reqs]


def _measure(url: str, reqs: list[HttpRequest], clients: int, duration: float, warmup: float) -> dict:
    port = int(url.rsplit(":", 1)[1])
    one = rotating_closed_loop("127.0.0.1", port, reqs, 1, duration, warmup)
    many = rotating_closed_loop("127.0.0.1", port, reqs, clients, duration, warmup)
    for result in (one, many):
        if result.errors:
            raise BenchError(f"{url}: {result.errors} failed answers, first: {result.first_error}")
    return {
        "p50_ms_1": latency_summary_ms(one.latencies_s)["p50"],
        "rate_1": one.rate,
        f"rate_{clients}": many.rate,
        f"p50_ms_{clients}": latency_summary_ms(many.latencies_s)["p50"],
    }


def _agree(ours: list[dict], theirs: list[dict]) -> list[str]:
    problems = []
    for image, a, b in zip(IMAGES, ours, theirs):
        if a.get("err_no") != b.get("err_no") or a.get("key") != b.get("key"):
            problems.append(f"{os.path.basename(image)}: {a.get('err_no')} vs {b.get('err_no')}")
        elif not all(replay.value_agrees(x, y, SCORE_TOL) for x, y in zip(a["value"], b["value"])):
            problems.append(f"{os.path.basename(image)}: values differ")
    return problems


def main() -> int:
    from bench.lib.paddle_serving_venv import ensure_venv

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="ocr", choices=["ocr", "pdserving"])
    ap.add_argument("--config", default="case", choices=["case", "official"])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    python, versions = ensure_venv()
    case = CASES[args.case]
    path = f"/{case.service}/prediction"
    reqs = _requests(path)
    runs: dict[str, list[dict]] = {"paddle_serving": [], "batchline": []}
    answers: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        case_dir = prepare_case(args.case, tmp, python)
        if args.config == "official":
            _official(case_dir)
        _, http_port = replay.set_ports(case_dir)
        for rnd in range(args.rounds):
            for name in ("paddle_serving", "batchline"):
                server: Any
                if name == "paddle_serving":
                    server = RealPaddleServing(python, case_dir, case.entry, http_port, path)
                    server.wait_ready(reqs[0].body)
                else:
                    server = ServerProcess(os.path.join(case_dir, case.entry), port=http_port, ready_timeout=300)
                try:
                    if rnd == 0:
                        answers[name] = _first_answers(server.url, reqs)
                    result = _measure(server.url, reqs, args.clients, args.duration, args.warmup)
                finally:
                    server.stop()
                runs[name].append(result)
                print(f"round {rnd + 1} {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in result.items()), flush=True)
    disagree = _agree(answers["batchline"], answers["paddle_serving"])
    key = f"rate_{args.clients}"
    med = {n: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for n, rs in runs.items()}
    ratio = med["batchline"][key] / med["paddle_serving"][key]
    p50_ratio = med["paddle_serving"]["p50_ms_1"] / med["batchline"]["p50_ms_1"]
    print(f"\ncase {args.case}, config {args.config}, {len(IMAGES)} images cycled, medians of {args.rounds} rounds")
    c = args.clients
    print(f"| server | p50 at 1 client (ms) | img/s at 1 | img/s at {c} | p50 at {c} (ms) |")
    print("|---|---|---|---|---|")
    for n, m in med.items():
        print(f"| {n} | {m['p50_ms_1']:.0f} | {m['rate_1']:.2f} | {m[key]:.2f} | {m[f'p50_ms_{args.clients}']:.0f} |")
    print(f"answers: {len(IMAGES) - len(disagree)}/{len(IMAGES)} agree" + (f" ({disagree[:3]})" if disagree else ""))
    print(f"batchline / Paddle Serving: throughput at {c} clients {ratio:.2f}x, p50 at 1 client {p50_ratio:.2f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "runs": runs,
                    "medians": med,
                    "ratio": ratio,
                    "p50_ratio": p50_ratio,
                    "disagree": disagree,
                    "reference": versions,
                },
                f,
                indent=1,
            )
    return 0 if not disagree else 1


if __name__ == "__main__":
    run_main(main)
