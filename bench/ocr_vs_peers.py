"""Full OCR (det -> rec) throughput: batchline vs what a user has without it.

Same rendered pages, same PP-OCRv4 weights, measured in one run in
interleaved rounds. batchline runs the config as shipped (configs/ocr.yml:
process instances, 2 x 1 thread per op) unless ``--instance-mode``,
``--instances``, ``--op-threads`` override every op; the PaddleOCR peers use
``cpu_threads`` = ``--threads``. The thread budget used is printed:

* batchline: configs/ocr.yml served, ``--clients`` closed-loop clients; and
  its fast profile (``--fast-config``, default configs/ocr_fast.yml, run as
  written; skipped when absent);
* peer server: bench/peers/flask_paddleocr.py (Flask + waitress, one PaddleOCR
  behind a lock), same clients, same protocol;
* in-process: PaddleOCR's own sequential loop (decode + ``ocr()``) over the
  same images in this process, on oneDNN (PaddleOCR 2.10 offers no other CPU
  engine);
* in-process on OpenVINO (diagnostic, ``--no-ov-loop`` skips it): the same
  loop with PaddleOCR's predictors switched to Paddle Inference's OpenVINO
  engine, the engine batchline's shipped config uses;
* RapidOCR 1.4.4 (``--no-rapidocr`` skips it), in a virtual environment of its
  own (bench/lib/rapidocr_venv.py: it pins OpenVINO 2024.0): rapidocr_openvino
  at its default precision and with fp32 forced, and rapidocr_onnxruntime,
  each as a Flask + waitress server with a pool of instances
  (bench/peers/rapidocr_server.py; the pool layout is the best of a short
  trial of ``--rapid-layouts``) and as its own sequential loop
  (bench/peers/rapidocr_loop.py, ``--threads`` threads). Same PP-OCRv4
  weights (its ONNX export), its options set to PaddleOCR's
  (bench/peers/rapidocr_build.py).

Every contender's answers on the pages are checked: parity (PaddleOCR 2.10's
lines with identical text) and char accuracy against the rendered text.

Targets: batchline >= 1.5x each PaddleOCR peer; batchline >= 1.3x
RapidOCR-OpenVINO fp32 (the faster of its server and loop) with parity >=
0.98; the fast profile >= 1.3x RapidOCR-OpenVINO at its default precision
with char accuracy >= the exact profile's.

    python -m bench.ocr_vs_peers [--clients 8 --duration 10 --rounds 2]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from typing import Any

from bench.lib.configs import derive_config, load_yaml, pipeline_name
from bench.lib.contenders import Contender, loop_contender, rapid_loop_contender, server_contender
from bench.lib.engines import ENGINES, THREADS, add_engine_arg, engine_label
from bench.lib.inputs import decode_png, document_pngs, document_truth, documents_dir
from bench.lib.measure import image_payloads
from bench.lib.paddleocr_engines import paddleocr_engine_openvino
from bench.lib.paths import CONFIG_DIR
from bench.lib.peer_process import PeerProcess
from bench.lib.peers_accuracy import char_accuracy_vs_truth, same_text_share
from bench.lib.peers_report import Quality, Target, check, table
from bench.lib.rapidocr_peers import (
    Layout,
    RapidLoop,
    RapidSpec,
    choose_layout,
    parse_layouts,
    rapidocr_server,
)
from bench.lib.results import verdict, write_result
from bench.lib.script import run_main
from bench.lib.server import served

TARGET = 1.5
RAPID_TARGET = 1.3
PARITY_TARGET = 0.98
PEER = "bench.peers.flask_paddleocr"  # run with -m from the repo root (PeerProcess's cwd)
RAPID_SPECS = (RapidSpec("openvino", "default"), RapidSpec("openvino", "fp32"), RapidSpec("onnxruntime", "default"))
EXACT_VS_RAPID = Target(
    "exact vs RapidOCR-OpenVINO fp32",
    "batchline",
    ("rapidocr_ov_fp32_server", "rapidocr_ov_fp32_loop"),
    RAPID_TARGET,
)
FAST_VS_RAPID = Target(
    "fast vs RapidOCR-OpenVINO default",
    "batchline_fast",
    ("rapidocr_ov_default_server", "rapidocr_ov_default_loop"),
    RAPID_TARGET,
)


def config_layout(path: str) -> tuple[str, str]:
    """(per-op layout, per-op precision) of a batchline config."""
    layout, precision = [], []
    for op_name, op_conf in load_yaml(path)["op"].items():
        svc = op_conf.get("local_service_conf") or {}
        mode, n, t = svc.get("instance_mode", "thread"), int(svc.get("instance_num", 1)), int(svc.get("thread_num", 1))
        engine = engine_label(svc)
        layout.append(f"{op_name} {engine} {mode} {n}x{t}")
        precision.append(f"{op_name} {svc.get('precision', 'fp32')}")
    return ", ".join(layout), "/".join(precision)


def fast_config(arg: str) -> str | None:
    """The fast profile's config file (served as it is), or None (with a note) when absent."""
    if not arg:
        return None
    path = arg if os.path.isfile(arg) else os.path.join(CONFIG_DIR, arg)
    if not os.path.isfile(path):
        print(f"fast profile: skipped ({arg} does not exist)", flush=True)
        return None
    return path


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="ocr")
    ap.add_argument("--fast-config", default="ocr_fast.yml", help="batchline's fast profile ('': skip)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--duration", type=float, default=10.0, help="measured seconds per round and contender")
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--prime", type=float, default=5.0, help="unmeasured seconds of load on each contender first")
    ap.add_argument("--images", type=int, default=24, help="rendered pages to cycle through")
    ap.add_argument("--threads", type=int, default=THREADS, help="Paddle / RapidOCR math threads of the peers")
    ap.add_argument("--c1", type=int, default=1, help="also measure batchline at 1 client (diagnostic; 0: skip)")
    ap.add_argument("--check", type=int, default=0, help="pages whose answers are checked (0: all)")
    ap.add_argument("--instance-mode", choices=("thread", "process"), default=None, help="batchline's, every op")
    ap.add_argument("--op-threads", type=int, default=0, help="batchline thread_num per op instance")
    ap.add_argument("--instances", type=int, default=0, help="batchline instance_num per op")
    add_engine_arg(ap)
    ap.add_argument("--no-ov-loop", action="store_true", help="skip the PaddleOCR-on-OpenVINO loop (diagnostic)")
    ap.add_argument("--no-rapidocr", action="store_true", help="skip the RapidOCR contenders")
    ap.add_argument("--no-rapid-loops", action="store_true", help="skip RapidOCR's own loops (keep its servers)")
    ap.add_argument(
        "--rapid-layouts",
        default="1x2,2x1,2x1-unpinned",
        help="RapidOCR server pool layouts (POOLxTHREADS[-unpinned]) tried per engine; the best serves",
    )
    ap.add_argument("--layout-trial", type=float, default=6.0, help="measured seconds per layout trial")
    ap.add_argument(
        "--rapid-det-resize",
        choices=("paddleocr", "rapidocr"),
        default="paddleocr",
        help="RapidOCR's det input size: PaddleOCR's (longer side <= 960) or its own steps (960/1500/2000)",
    )
    return ap.parse_args()


def main() -> int:
    started = time.monotonic()
    args = parse_args()
    # Default: the config as shipped; the flags override every op of the exact profile for variants.
    overrides: dict = dict(ENGINES[args.engine])
    if args.instance_mode:
        overrides["instance_mode"] = args.instance_mode
    if args.op_threads:
        overrides["thread_num"] = args.op_threads
    if args.instances:
        overrides["instance_num"] = args.instances
    path = derive_config(args.config, tag="ocr", all_ops=overrides)
    fast_path = fast_config(args.fast_config)
    pngs = document_pngs(args.images)
    checked = len(pngs) if args.check <= 0 else min(args.check, len(pngs))
    payloads = image_payloads(pngs)
    truth = document_truth(args.images)[:checked]

    python: str | None = None
    layouts: dict[str, Layout] = {}
    trials: dict[str, dict[str, float]] = {}
    rapid_versions: dict[str, str | None] = {}
    if not args.no_rapidocr:
        from bench.lib.rapidocr_venv import ensure_venv

        python, rapid_versions = ensure_venv()
        print("RapidOCR environment: " + ", ".join(f"{k} {v}" for k, v in rapid_versions.items() if v), flush=True)
        for engine in ("openvino", "onnxruntime"):
            spec = RapidSpec(engine)
            layouts[engine], trials[engine] = choose_layout(
                python,
                spec,
                parse_layouts(args.rapid_layouts),
                payloads,
                args.clients,
                args.layout_trial,
                args.rapid_det_resize,
            )
            print(f"{spec.title} server layout: pool x threads {layouts[engine]}", flush=True)

    exact_layout, exact_precision = config_layout(path)
    budget = f"batchline per op: {exact_layout}; PaddleOCR peers: oneDNN, cpu_threads = {args.threads}"
    if fast_path:
        budget += f"; batchline fast per op: {config_layout(fast_path)[0]}"
    if layouts:
        budget += (
            f"; RapidOCR servers: pool x threads {layouts['openvino']} (OpenVINO), {layouts['onnxruntime']} "
            f"(onnxruntime); RapidOCR loops: 1 x {args.threads}"
        )
    print(f"thread budget: {budget}", flush=True)

    ov_cache = tempfile.TemporaryDirectory(prefix="bench-ov-")
    with contextlib.ExitStack() as stack:
        stack.callback(ov_cache.cleanup)
        contenders = start_contenders(stack, args, path, fast_path, python, layouts, payloads, ov_cache.name)
        texts = {c.key: c.answers(checked) for c in contenders if c.key != "batchline_c1"}  # also a warm-up
        reference = texts["in_process"]
        quality = {
            key: Quality(same_text_share(reference, got)["share"], char_accuracy_vs_truth(truth, got)["accuracy"])
            for key, got in texts.items()
        }
        quality["batchline_c1"] = quality["batchline"]  # the same server
        if args.prime > 0:
            for c in contenders:
                if c.key != "batchline_c1":
                    c.prime(args.prime / 2 if c.key.endswith("loop") or c.key.startswith("in_process") else args.prime)
        for rnd in range(args.rounds):
            for c in contenders if rnd % 2 == 0 else contenders[::-1]:
                r = c.measure(args.duration, args.warmup)
                print(f"round {rnd} {c.key:28s}: {r['images'] / r['seconds']:6.2f} images/s{op_summary(r)}", flush=True)
    code = report(args, contenders, quality, checked, budget, layouts, trials, rapid_versions)
    print(f"(whole run {time.monotonic() - started:.0f} s)", file=sys.stderr)
    return code


def start_contenders(
    stack: contextlib.ExitStack,
    args: argparse.Namespace,
    path: str,
    fast_path: str | None,
    python: str | None,
    layouts: dict[str, Layout],
    payloads: list[dict],
    ov_cache: str,
) -> list[Contender]:
    """Every contender started and ready (stopped when ``stack`` closes), in round order."""
    from tests.support.ocr_reference import make_reference

    name, n = pipeline_name(path), len(payloads)
    ours = stack.enter_context(served(path))
    fast = stack.enter_context(served(fast_path)) if fast_path else None
    flask = PeerProcess([sys.executable, "-m", PEER, "--cpu-threads", str(args.threads), "--mkldnn"], "flask-paddleocr")
    stack.callback(flask.stop)
    rapid_servers: list[tuple[RapidSpec, PeerProcess]] = []
    rapid_loops: list[RapidLoop] = []
    if python:
        for spec in RAPID_SPECS:
            server = rapidocr_server(python, spec, layouts[spec.engine], args.rapid_det_resize)
            stack.callback(server.stop)
            rapid_servers.append((spec, server))
        if not args.no_rapid_loops:
            for spec in RAPID_SPECS:
                loop = RapidLoop(python, spec, documents_dir(args.images), args.threads, args.rapid_det_resize)
                stack.callback(loop.close)
                rapid_loops.append(loop)
    for peer in [flask, *(server for _, server in rapid_servers)]:
        peer.wait_ready()
    for loop in rapid_loops:
        loop.wait_ready()
    ocr = make_reference(use_angle_cls=False, cpu_threads=args.threads, enable_mkldnn=True)
    ocr_ov = None
    if not args.no_ov_loop:
        with paddleocr_engine_openvino(ov_cache):
            ocr_ov = make_reference(use_angle_cls=False, cpu_threads=args.threads, enable_mkldnn=True)

    pngs = document_pngs(args.images)
    one = f"1x{args.threads}"

    def read_with(engine: Any) -> Any:
        return lambda i: engine.ocr(decode_png(pngs[i]), cls=False)  # decode counted, as in the servers

    def answers_of(engine: Any) -> Any:
        return lambda k: [[str(t) for _, (t, _) in (read_with(engine)(i)[0] or [])] for i in range(k)]

    exact_layout, exact_precision = config_layout(path)
    out = [
        server_contender(
            "batchline", "batchline exact", ours.url, name, payloads, args.clients, True, exact_precision, exact_layout
        )
    ]
    if fast is not None and fast_path:
        fast_layout, fast_precision = config_layout(fast_path)
        out.append(
            server_contender(
                "batchline_fast",
                "batchline fast",
                fast.url,
                pipeline_name(fast_path),
                payloads,
                args.clients,
                True,
                fast_precision,
                fast_layout,
            )
        )
    out.append(
        server_contender(
            "peer_server",
            "Flask+PaddleOCR server (oneDNN)",
            flask.url,
            "ocr",
            payloads,
            args.clients,
            False,
            "fp32",
            one,
        )
    )
    out.append(loop_contender("in_process", "PaddleOCR loop (oneDNN)", read_with(ocr), n, answers_of(ocr), "fp32", one))
    if ocr_ov is not None:
        out.append(
            loop_contender(
                "in_process_ov",
                "PaddleOCR loop, OpenVINO (diag.)",
                read_with(ocr_ov),
                n,
                answers_of(ocr_ov),
                "fp32",
                one,
            )
        )
    for spec, server in rapid_servers:
        info = server.get_json("/peer/info")
        precision = "/".join(f"{k} {v}" for k, v in info["precisions"].items())
        layout = f"pool {info['pool']}x{info['threads']}" + ("" if info["pinning"] else " unpinned")
        out.append(
            server_contender(
                f"{spec.key}_server",
                f"{spec.title} server",
                server.url,
                "ocr",
                payloads,
                args.clients,
                False,
                precision,
                layout,
            )
        )
    out.extend(rapid_loop_contender(loop, n) for loop in rapid_loops)
    if args.c1:
        out.append(
            server_contender(
                "batchline_c1",
                "batchline exact, 1 client (diag.)",
                ours.url,
                name,
                payloads,
                1,
                True,
                exact_precision,
                exact_layout,
            )
        )
    return out


def op_summary(r: dict) -> str:
    """batchline's per-op batch statistics of one round (empty for peers)."""
    extra = ""
    for op_name, st in (r.get("op_stats") or {}).items():
        extra += (
            f" {op_name}[batch {st.get('mean_batch_size') or 0:.1f} "
            f"rows/call {st.get('mean_call_rows') or 0:.1f} run "
            f"{st.get('mean_run_ms') or 0:.0f}ms wait {st.get('mean_queue_wait_ms') or 0:.0f}ms]"
        )
    return extra


def report(
    args: argparse.Namespace,
    contenders: list[Contender],
    quality: dict[str, Quality],
    checked: int,
    budget: str,
    layouts: dict[str, Layout],
    trials: dict[str, dict[str, float]],
    rapid_versions: dict[str, str | None],
) -> int:
    by_key = {c.key: c for c in contenders}
    ours_r, peer_r, inproc_r = by_key["batchline"].rate(), by_key["peer_server"].rate(), by_key["in_process"].rate()
    assert ours_r and peer_r and inproc_r  # every round measured something (closed_loop raises otherwise)
    vs_peer, vs_inproc = ours_r / peer_r, ours_r / inproc_r
    exact_q, fast_q = quality["batchline"], quality.get("batchline_fast")
    parity_ok = exact_q.parity is not None and exact_q.parity >= PARITY_TARGET
    exact_ratio, exact_line = check(
        EXACT_VS_RAPID, by_key, parity_ok, f"parity {exact_q.parity:.3f} >= {PARITY_TARGET}"
    )
    acc_ok = fast_q is not None and (fast_q.char_accuracy or 0.0) >= (exact_q.char_accuracy or 0.0)
    fast_ratio, fast_line = check(
        FAST_VS_RAPID,
        by_key,
        acc_ok,
        f"char accuracy {fast_q.char_accuracy if fast_q else float('nan'):.4f} >= exact's {exact_q.char_accuracy:.4f}",
    )
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
            "rapidocr": {
                "versions": rapid_versions,
                "server_layouts": {k: str(v) for k, v in layouts.items()},
                "layout_trials_images_per_s": trials,
            },
            "images_per_s": {c.key: c.rate() for c in contenders},
            "precision": {c.key: c.precision for c in contenders},
            "layout": {c.key: c.layout for c in contenders},
            "quality": {
                "pages": checked,
                "parity_vs_paddleocr": {k: q.parity for k, q in quality.items()},
                "char_accuracy_vs_truth": {k: q.char_accuracy for k, q in quality.items()},
            },
            "ratios": {
                "vs_peer_server": vs_peer,
                "vs_in_process": vs_inproc,
                **{f"vs_{c.key}": ours_r / r for c in contenders if (r := c.rate())},
                "exact_vs_rapidocr_ov_fp32": exact_ratio,
                "fast_vs_rapidocr_ov_default": fast_ratio,
            },
            "rounds": {c.key: c.rounds for c in contenders},
            "targets": {"paddleocr_peers": TARGET, "rapidocr": RAPID_TARGET, "parity": PARITY_TARGET},
        },
    )
    print()
    print(f"thread budget: {budget}")
    print(
        f"answers on {checked} pages: parity = share of PaddleOCR 2.10's lines with identical text (in reading "
        f"order); char accuracy vs the rendered text (spaces removed)"
    )
    print(table(contenders, by_key["batchline"], quality))
    print()
    print(f"batchline / Flask+PaddleOCR server = {vs_peer:.2f}x (target >= {TARGET}: {verdict(vs_peer, TARGET)})")
    print(f"batchline / PaddleOCR in-process   = {vs_inproc:.2f}x (target >= {TARGET}: {verdict(vs_inproc, TARGET)})")
    print(exact_line)
    print(fast_line)
    rapid = "" if exact_ratio is None else f"; {exact_ratio:.2f}x RapidOCR-OV fp32"
    rapid += "" if fast_ratio is None else f"; fast {fast_ratio:.2f}x RapidOCR-OV default"
    print(f"RATIO ocr vs peers = {vs_peer:.2f}x server, {vs_inproc:.2f}x in-process{rapid}")
    return 0


if __name__ == "__main__":
    run_main(main)
