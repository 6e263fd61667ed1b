"""Full OCR (det -> rec) throughput: batchline vs what a user has without it.

Same rendered pages, same PP-OCRv4 weights, oneDNN on for all, measured in one
run in interleaved rounds. batchline runs the config as shipped (configs/ocr.yml:
process instances, 2 x 1 thread per op) unless ``--instance-mode``,
``--instances``, ``--op-threads`` override every op; the peers use PaddleOCR
``cpu_threads`` = ``--threads``. The thread budget used is printed:

* batchline: configs/ocr.yml served, ``--clients`` closed-loop clients;
* peer server: bench/peers/flask_paddleocr.py (Flask + waitress, one PaddleOCR
  behind a lock), same clients, same protocol;
* in-process: PaddleOCR's own sequential loop (decode + ``ocr()``) over the
  same images in this process, on oneDNN (PaddleOCR 2.10 offers no other CPU
  engine);
* in-process on OpenVINO (diagnostic, ``--no-ov-loop`` skips it): the same
  loop with PaddleOCR's predictors switched to Paddle Inference's OpenVINO
  engine, the engine batchline's shipped config uses, so the table separates
  what the engine choice gives from what serving gives.

Targets: batchline >= 1.5x each peer (images/s).

    python bench/ocr_vs_peers.py [--clients 8 --duration 15 --rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.lib.configs import derive_config, load_yaml, pipeline_name  # noqa: E402
from bench.lib.engines import ENGINES, THREADS, add_engine_arg  # noqa: E402
from bench.lib.inputs import decode_png, document_pngs  # noqa: E402
from bench.lib.measure import closed_loop, image_payloads, time_loop  # noqa: E402
from bench.lib.paddleocr_engines import paddleocr_engine_openvino  # noqa: E402
from bench.lib.paths import ROOT, cache_dir  # noqa: E402
from bench.lib.results import verdict, write_result  # noqa: E402
from bench.lib.script import BenchError, run_main  # noqa: E402
from bench.lib.server import served  # noqa: E402

TARGET = 1.5
PEER = os.path.join(ROOT, "bench", "peers", "flask_paddleocr.py")


class PeerServer:
    """bench/peers/flask_paddleocr.py in a subprocess on a free port."""

    def __init__(self, threads: int, mkldnn: bool, ready_timeout: float = 300.0):
        from tests.support.server_process import free_port

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(cache_dir("logs"), f"peer-{self.port}.log")
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (the peer writes to it until stop() closes it)
        cmd = [sys.executable, PEER, "--port", str(self.port), "--cpu-threads", str(threads)]
        if mkldnn:
            cmd.append("--mkldnn")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT)
        self.ready_timeout = ready_timeout

    def wait_ready(self) -> None:
        import requests

        end = time.monotonic() + self.ready_timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise BenchError(f"peer server exited with {self.proc.returncode}; log {self.log_path}")
            try:
                if requests.get(self.url + "/health/ready", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        raise BenchError(f"peer server not ready after {self.ready_timeout}s; log {self.log_path}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


def texts(lines) -> list[str]:
    return [line["text"] for line in lines]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="ocr")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--duration", type=float, default=15.0, help="measured seconds per round and contender")
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--prime", type=float, default=10.0, help="unmeasured seconds of load on each server first")
    ap.add_argument("--images", type=int, default=24, help="rendered pages to cycle through")
    ap.add_argument("--threads", type=int, default=THREADS, help="Paddle math threads, for everyone")
    ap.add_argument("--c1", type=int, default=1, help="also measure batchline at 1 client (diagnostic; 0: skip)")
    ap.add_argument("--check", type=int, default=6, help="pages whose answers are compared across contenders")
    ap.add_argument(
        "--instance-mode",
        choices=("thread", "process"),
        default=None,
        help="batchline's instance_mode for every op (default: as configured)",
    )
    ap.add_argument(
        "--op-threads", type=int, default=0, help="batchline thread_num per op instance (default: as configured)"
    )
    ap.add_argument("--instances", type=int, default=0, help="batchline instance_num per op (default: as configured)")
    add_engine_arg(ap)
    ap.add_argument(
        "--no-ov-loop", action="store_true", help="skip the diagnostic PaddleOCR-on-OpenVINO in-process loop"
    )
    args = ap.parse_args()

    # Default: the config as shipped (engine, instance_mode / instance_num / thread_num).
    # The flags override every op for variants.
    overrides: dict = dict(ENGINES[args.engine])
    if args.instance_mode:
        overrides["instance_mode"] = args.instance_mode
    if args.op_threads:
        overrides["thread_num"] = args.op_threads
    if args.instances:
        overrides["instance_num"] = args.instances
    path = derive_config(args.config, tag="ocr", all_ops=overrides)
    layout = []
    for op_name, op_conf in load_yaml(path)["op"].items():
        svc = op_conf.get("local_service_conf") or {}
        mode, n, t = svc.get("instance_mode", "thread"), int(svc.get("instance_num", 1)), int(svc.get("thread_num", 1))
        engine = "openvino" if svc.get("use_openvino") else ("onednn" if svc.get("use_mkldnn") else "plain")
        layout.append(f"{op_name} {engine} {mode} {n}x{t}")
    budget = "batchline per op: " + ", ".join(layout) + f"; peers: PaddleOCR oneDNN, cpu_threads = {args.threads}"
    print(f"thread budget: {budget}", flush=True)
    name = pipeline_name(path)
    pngs = document_pngs(args.images)
    images = [decode_png(p) for p in pngs]
    payloads = image_payloads(pngs)

    from client.pipeline_client import PipelineClient
    from tests.support.ocr_reference import make_reference

    peer = PeerServer(args.threads, mkldnn=True)
    results: dict = {"batchline": [], "peer_server": [], "in_process": [], "in_process_ov": [], "batchline_c1": []}
    agreement = {}
    ov_cache = tempfile.TemporaryDirectory(prefix="bench-ov-")
    try:
        with served(path) as ours:
            peer.wait_ready()
            ocr = make_reference(use_angle_cls=False, cpu_threads=args.threads, enable_mkldnn=True)
            ocr_ov = None
            if not args.no_ov_loop:
                with paddleocr_engine_openvino(ov_cache.name):
                    ocr_ov = make_reference(use_angle_cls=False, cpu_threads=args.threads, enable_mkldnn=True)

            def loop_of(engine):
                def in_process(i: int) -> int:
                    img = decode_png(pngs[i % len(pngs)])  # decode counted, as in the servers
                    engine.ocr(img, cls=False)
                    return 1

                return in_process

            in_process = loop_of(ocr)

            # answers agree? (same pages through all three)
            with PipelineClient(ours.url) as c_ours, PipelineClient(peer.url) as c_peer:
                same_ours = same_peer = same_ov = total = 0
                for i in range(min(args.check, len(pngs))):
                    a = texts(json.loads(c_ours.predict_raw(name, payloads[i])["value"][0]))
                    b = texts(json.loads(c_peer.predict_raw("ocr", payloads[i])["value"][0]))
                    page = ocr.ocr(images[i], cls=False)[0] or []
                    ref = [str(t) for _, (t, _) in page]
                    total += len(ref)
                    same_ours += sum(x == y for x, y in zip(a, ref))
                    same_peer += sum(x == y for x, y in zip(b, ref))
                    if ocr_ov is not None:
                        c = [str(t) for _, (t, _) in (ocr_ov.ocr(images[i], cls=False)[0] or [])]
                        same_ov += sum(x == y for x, y in zip(c, ref))
                agreement = {
                    "reference_lines": total,
                    "batchline_same_text": same_ours,
                    "peer_same_text": same_peer,
                    "in_process_ov_same_text": same_ov if ocr_ov is not None else None,
                }
            if args.prime > 0:
                closed_loop(ours.url, name, payloads, args.clients, args.prime, 0.0)
                closed_loop(peer.url, "ocr", payloads, args.clients, args.prime, 0.0, metrics=False)
                time_loop(in_process, args.prime / 2)
                if ocr_ov is not None:
                    time_loop(loop_of(ocr_ov), args.prime / 2)
            order = (
                ["batchline", "peer_server", "in_process"]
                + (["in_process_ov"] if ocr_ov is not None else [])
                + (["batchline_c1"] if args.c1 else [])
            )
            for rnd in range(args.rounds):
                for who in order if rnd % 2 == 0 else order[::-1]:
                    if who.startswith("batchline"):
                        clients = 1 if who == "batchline_c1" else args.clients
                        r = closed_loop(ours.url, name, payloads, clients, args.duration, args.warmup)
                        rate = r["qps"]
                    elif who == "peer_server":
                        r = closed_loop(
                            peer.url, "ocr", payloads, args.clients, args.duration, args.warmup, metrics=False
                        )
                        rate = r["qps"]
                    else:
                        loop = in_process if who == "in_process" else loop_of(ocr_ov)
                        r = time_loop(loop, args.duration, min_calls=len(pngs) // 4)
                        rate = r["items_per_s"]
                    results[who].append(r)
                    extra = ""
                    for op_name, st in (r.get("op_stats") or {}).items():
                        extra += (
                            f" {op_name}[batch {st.get('mean_batch_size') or 0:.1f} "
                            f"rows/call {st.get('mean_call_rows') or 0:.1f} run "
                            f"{st.get('mean_run_ms') or 0:.0f}ms wait {st.get('mean_queue_wait_ms') or 0:.0f}ms]"
                        )
                    print(f"round {rnd} {who:11s}: {rate:6.2f} images/s{extra}", flush=True)
    finally:
        peer.stop()
        ov_cache.cleanup()

    def rate(who: str) -> float:
        rs = results[who]
        if who.startswith("in_process"):
            return sum(r["items"] for r in rs) / sum(r["seconds"] for r in rs)
        return sum(r["ok"] for r in rs) / sum(r["duration_s"] for r in rs)

    ours_r, peer_r, inproc_r = rate("batchline"), rate("peer_server"), rate("in_process")
    c1_r = rate("batchline_c1") if results["batchline_c1"] else None
    ov_r = rate("in_process_ov") if results["in_process_ov"] else None
    vs_peer, vs_inproc = ours_r / peer_r, ours_r / inproc_r
    variant = "_".join(
        f"{k}{v}"
        for k, v in (
            ("mode-", args.instance_mode),
            ("instances", args.instances),
            ("threads", args.op_threads),
            ("engine-", args.engine if args.engine != "config" else None),
        )
        if v
    )
    write_result(
        "ocr_vs_peers" + (f"_{variant}" if variant else ""),
        {  # variants don't overwrite
            "args": vars(args),
            "thread_budget": budget,
            "config": load_yaml(path),
            "images_per_s": {
                "batchline": ours_r,
                "peer_server": peer_r,
                "in_process": inproc_r,
                "in_process_openvino": ov_r,
                "batchline_1_client": c1_r,
            },
            "ratios": {
                "vs_peer_server": vs_peer,
                "vs_in_process": vs_inproc,
                "vs_in_process_openvino": ours_r / ov_r if ov_r else None,
            },
            "agreement": agreement,
            "rounds": results,
            "target": TARGET,
        },
    )
    print()
    print(
        f"answers on {args.check} pages: PaddleOCR {agreement.get('reference_lines')} lines; same text: "
        f"batchline {agreement.get('batchline_same_text')}, peer server {agreement.get('peer_same_text')}"
        + (f", PaddleOCR on OpenVINO {agreement.get('in_process_ov_same_text')}" if ov_r else "")
    )
    print(
        f"images/s: batchline {ours_r:.2f}, Flask+PaddleOCR server {peer_r:.2f}, PaddleOCR in-process {inproc_r:.2f}"
        f"  ({args.clients} clients; peers on oneDNN)"
    )
    print(f"thread budget: {budget}")
    if c1_r is not None:
        print(f"diagnostic: batchline at 1 client {c1_r:.2f} images/s = {c1_r / inproc_r:.2f}x PaddleOCR in-process")
    print(f"batchline / Flask+PaddleOCR server = {vs_peer:.2f}x (target >= {TARGET}: {verdict(vs_peer, TARGET)})")
    print(f"batchline / PaddleOCR in-process   = {vs_inproc:.2f}x (target >= {TARGET}: {verdict(vs_inproc, TARGET)})")
    if ov_r:
        print(
            f"diagnostic: batchline / PaddleOCR in-process on OpenVINO = {ours_r / ov_r:.2f}x "
            f"({ov_r:.2f} images/s: what the engine alone gives a sequential loop)"
        )
    print(f"RATIO ocr vs peers = {vs_peer:.2f}x server, {vs_inproc:.2f}x in-process")
    return 0


if __name__ == "__main__":
    run_main(main)
