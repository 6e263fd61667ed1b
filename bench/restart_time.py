"""How long a crashed server takes to come back: start to live, start to ready.

With in-process instances (``instance_mode: thread``, the shipped default) a
native crash in a model kills the whole server; the supervisor (systemd's
``Restart=on-failure``, Kubernetes' restart policy) starts it again. This
measures what that costs: for each config, ``--rounds`` times, the server
is started, timed until ``/health/live`` answers 200 (listening; readiness
says 503 while models load) and until ``/health/ready`` answers 200 (every
predictor loaded and warmed), checked with one request, then SIGKILLed as a
crash would end it. Round 0 starts with whatever the OS caches hold; the
later rounds are what a restart after a crash sees.

    python -m bench.restart_time [--configs ocr,rec --rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

from bench.lib.configs import pipeline_name, repo_config_path
from bench.lib.inputs import bench_crops, sample_page_pngs
from bench.lib.measure import image_payloads
from bench.lib.results import write_result
from bench.lib.script import BenchError, run_main


def until_200(url: str, proc: subprocess.Popen, start: float, timeout: float) -> float:
    """Seconds from ``start`` until ``url`` answers 200 (BenchError if the server exits or the timeout passes)."""
    import requests

    while time.monotonic() - start < timeout:
        if proc.poll() is not None:
            raise BenchError(f"server exited with {proc.returncode} before {url} answered 200")
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return time.monotonic() - start
        except requests.RequestException:
            pass
        time.sleep(0.05)
    raise BenchError(f"{url} did not answer 200 within {timeout:.0f} s")


def one_start(config: str, payload: dict) -> dict:
    from client.pipeline_client import PipelineClient
    from tests.support.server_process import ServerProcess

    start = time.monotonic()
    server = ServerProcess(config, wait_ready=False, extra_args=("--host", "127.0.0.1"))
    try:
        live = until_200(server.url + "/health/live", server.proc, start, 300)
        ready = until_200(server.url + "/health/ready", server.proc, start, 600)
        with PipelineClient(server.url, timeout=120) as client:
            client.predict_raw(pipeline_name(config), payload)
        return {"live_s": live, "ready_s": ready}
    finally:
        server.stop()  # SIGKILL, as a crash


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default="ocr,rec", help="repo configs, comma separated")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    inputs = {"ocr": image_payloads(sample_page_pngs()[:1])[0], "rec": image_payloads(bench_crops()[:1])[0]}
    out = {}
    for name in args.configs.split(","):
        config = repo_config_path(name)
        payload = inputs.get(name, inputs["ocr"])
        rounds = [one_start(config, payload) for _ in range(args.rounds)]
        for i, r in enumerate(rounds):
            print(f"{name} round {i}: live after {r['live_s']:.2f} s, ready after {r['ready_s']:.2f} s", flush=True)
        later = rounds[1:] or rounds
        out[name] = {
            "rounds": rounds,
            "live_s": statistics.median(r["live_s"] for r in later),
            "ready_s": statistics.median(r["ready_s"] for r in later),
        }
        print(
            f"{name}: after a crash, live in {out[name]['live_s']:.2f} s, ready in {out[name]['ready_s']:.2f} s "
            f"(median of rounds 1..{len(rounds) - 1 or 0})",
            flush=True,
        )
    write_result("restart_time", {"args": vars(args), "configs": out})
    print("RATIO " + ", ".join(f"{k} ready / live = {v['ready_s'] / v['live_s']:.1f}" for k, v in out.items()))
    return 0


if __name__ == "__main__":
    run_main(main)
