"""Where one rec request's time goes: a per-stage table of a lone request.

Rec pipeline (configs/rec.yml, ``max_queue_delay`` 10 ms, one instance), the
crop ``bench/idle_overhead.py`` uses. Two tables, every row measured in
interleaved rounds in one run (median per row, microseconds):

* **stages**: each step of the request path timed alone, in this process,
  with the server's own functions: client encode, JSON parse, base64, image
  decode, expand + preprocess, collate, shared-memory feed write and output
  read (what a process instance adds), the predictor run, CTC decode, answer
  encode, client decode;
* **layers**: the same request through growing parts of the server:
  ``direct`` (the op's hooks and predictor, no engine), ``engine``
  (``Pipeline.submit`` + ``result``: intake, batcher, instance and post
  threads), ``app`` (the Flask app called as a WSGI callable with the JSON
  body: parse, decode, engine, answer), ``served`` (a ``batchline serve``
  subprocess through the bundled client), and the HTTP floors
  (``GET /health/live`` through the bundled client, through a bare
  ``http.client`` connection and through ``requests``). Differences of neighbouring layers are the
  hand-offs, the HTTP app's own work and the transport.

``--cprofile N`` also profiles N app-layer requests and prints the top functions.

    python bench/request_path.py [--reps 200] [--instance-mode thread|process]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.lib.configs import derive_config, pipeline_name  # noqa: E402
from bench.lib.engines import ENGINES, THREADS, add_engine_arg  # noqa: E402
from bench.lib.inprocess import make_op  # noqa: E402
from bench.lib.inputs import bench_crops, idle_crop  # noqa: E402
from bench.lib.measure import RunSpans, served_span  # noqa: E402
from bench.lib.results import write_result  # noqa: E402
from bench.lib.script import run_main  # noqa: E402
from bench.lib.server import served  # noqa: E402

Step = Callable[[], object]


def interleaved(steps: dict[str, Step], reps: int, warm: int = 5) -> dict[str, list[float]]:
    """Each step ``reps`` times, one call of each per round, in a fresh random order each round
    (a rotation would keep each step behind the same one, e.g. behind a model run)."""
    return interleaved_net(steps, {}, reps, warm)[0]


def wsgi_caller(app: object, path: str, body: bytes) -> Step:
    """Call the Flask app as waitress would (a WSGI environ), without a socket."""

    def call() -> bytes:
        environ = {
            "REQUEST_METHOD": "POST",
            "SCRIPT_NAME": "",
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "0",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        status: list[str] = []
        chunks = app(environ, lambda s, h, exc=None: status.append(s))  # type: ignore[operator]
        data = b"".join(chunks)
        if hasattr(chunks, "close"):
            chunks.close()
        if not status or not status[0].startswith("200"):
            raise RuntimeError(f"app answered {status}: {data[:200]!r}")
        return data

    return call


def raw_get(url: str) -> Step:
    """``GET /health/live`` on one kept-alive ``http.client`` connection: the floor without the client library."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port)

    def call() -> bytes:
        conn.request("GET", "/health/live")
        return conn.getresponse().read()

    return call


def requests_session() -> Any:
    """A ``requests.Session``: what the bundled client used before client/transport.py, for contrast."""
    import requests

    return requests.Session()


def median_us(values: list[float]) -> float:
    return statistics.median(values) * 1e6


def stage_steps(op: Any, runner: Any, app: Any, crop: bytes, max_pixels: int, kind: str) -> dict[str, Step]:
    """The request path's steps, each runnable alone on the same input, with the server's own functions."""
    from client.pipeline_client import _parse_value, json_body, make_payload
    from client.transport import Answer
    from serving.engine.execute import predictor_calls
    from serving.http.decode import decode_base64, decode_image
    from serving.http.encode import to_json
    from serving.http.parse import parse_paddle
    from serving.runners.shared_memory import Segment, array_views, write_arrays

    payload = make_payload([("image", crop)])
    body = json.dumps(payload).encode()
    value = payload["value"][0]
    img = decode_image(crop, max_pixels=max_pixels)
    inputs = {"input": img}
    item = op.preprocess(op.expand(inputs)[0])
    (sub,) = list(predictor_calls(op, [item], []))
    outputs = runner.run(sub.feed)
    (out,) = op.uncollate(sub, outputs)
    feed_seg, out_seg = Segment(), Segment()
    feed_meta = write_arrays(feed_seg, list(sub.feed.items()))
    out_meta = write_arrays(out_seg, [(str(i), o) for i, o in enumerate(outputs)])

    decoded = op.postprocess(item, out)

    def answer() -> bytes:
        value = to_json(op.merge(inputs, [decoded]))
        with app.app_context():  # the answer as the app builds it (its JSON provider)
            resp = app.json.response(err_no=0, err_msg="", key=["result"], value=[value], logid=0)
        return resp.get_data()

    encoded = answer()

    return {
        "client: encode (base64 + JSON)": lambda: json_body(make_payload([("image", crop)])),
        "server: parse JSON body": lambda: parse_paddle(body, kind=kind, max_inputs=64, priority_levels=1),
        "server: base64 decode": lambda: decode_base64(value, "input 0"),
        "server: image decode (header check + imdecode)": lambda: decode_image(crop, max_pixels=max_pixels),
        "op: expand + preprocess": lambda: op.preprocess(op.expand(inputs)[0]),
        "op: collate": lambda: list(predictor_calls(op, [item], [])),
        "process instance: feed -> shared memory": lambda: write_arrays(feed_seg, list(sub.feed.items())),
        "process instance: feed views in the child": lambda: array_views(feed_seg.shm, feed_meta),
        "process instance: outputs <- shared memory": lambda: [v.copy() for v in array_views(out_seg.shm, out_meta)],
        "op: postprocess (CTC decode)": lambda: op.postprocess(item, out),
        "op: merge + answer JSON": answer,
        "client: decode answer": lambda: [_parse_value(v) for v in Answer(200, {}, encoded).json()["value"]],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="rec")
    ap.add_argument("--op", default="rec")
    ap.add_argument("--delay", type=float, default=10.0, help="max_queue_delay in ms")
    ap.add_argument("--reps", type=int, default=200, help="rounds per table")
    ap.add_argument("--instance-mode", choices=("thread", "process"), default="thread")
    ap.add_argument("--crop", choices=("short", "median"), default="short")
    ap.add_argument("--cprofile", type=int, default=0, help="also cProfile this many app-layer requests")
    ap.add_argument("--no-served", action="store_true", help="skip the served layer (no subprocess server)")
    add_engine_arg(ap)
    args = ap.parse_args()

    svc = {
        "thread_num": THREADS,
        "instance_num": 1,
        "max_queue_delay": args.delay,
        "instance_mode": args.instance_mode,
        **ENGINES[args.engine],
    }
    config_path = derive_config(args.config, tag="request-path", ops={args.op: svc})
    name = pipeline_name(config_path)

    import serving.engine.direct as direct
    import serving.engine.stage as stage_module
    from client.pipeline_client import PipelineClient, make_payload
    from serving.config import load_config
    from serving.engine.execute import predictor_calls
    from serving.engine.pipeline import Pipeline
    from serving.http.app import create_app
    from serving.http.decode import decode_image

    config = load_config(config_path)
    max_pixels = config.max_image_pixels
    kind = config.input_kind or "image"
    op, runners = make_op(config_path, args.op)
    crop = idle_crop(op, bench_crops(), args.crop)
    width = op.preprocess(op.expand({"input": decode_image(crop, max_pixels=max_pixels)})[0]).width
    body = json.dumps(make_payload([("image", crop)])).encode()

    # the layers' run spans: in-process, the run_batch of the direct path and of the stage
    spans = RunSpans()
    direct.run_batch = spans.wrap(direct.run_batch)  # type: ignore[assignment]
    stage_module.run_with_retry = spans.wrap(stage_module.run_with_retry)  # type: ignore[assignment]

    pipeline = Pipeline(config)
    pipeline.start()
    app = create_app(pipeline)
    # the small steps interleaved among themselves, the predictor run in a loop of its own
    # (a step right after a model run pays for the caches and engine threads the run left)
    stages = interleaved(stage_steps(op, runners[0], app, crop, max_pixels, kind), args.reps)
    feed = next(
        iter(
            predictor_calls(op, [op.preprocess(op.expand({"input": decode_image(crop, max_pixels=max_pixels)})[0])], [])
        )
    ).feed
    stages.update(interleaved({"predictor run (this process)": lambda: runners[0].run(feed)}, max(10, args.reps // 4)))
    call_app = wsgi_caller(app, f"/{name}/prediction", body)
    layers: dict[str, Step] = {
        "direct: decode + op hooks + run": lambda: direct.run_op_direct(
            op, runners[0], {"input": decode_image(crop, max_pixels=max_pixels)}
        ),
        "engine: decode + submit/result": lambda: pipeline.submit(decode_image(crop, max_pixels=max_pixels)).result(),
        "app: WSGI call with the JSON body": call_app,
    }
    run_span: dict[str, Callable[[], float]] = {k: spans.take for k in layers}
    try:
        if args.no_served:
            totals, runs = interleaved_net(layers, run_span, args.reps)
        else:
            with served(config_path) as srv, PipelineClient(srv.url, pool_size=1) as client:
                payload = make_payload([("image", crop)])
                served_key = "served: bundled client -> batchline serve"
                layers[served_key] = lambda: client.predict_raw(name, payload)
                layers["HTTP floor: GET /health/live, bundled client"] = client.health_live
                layers["HTTP floor: GET /health/live, http.client"] = raw_get(srv.url)
                session = requests_session()
                layers["HTTP floor: GET /health/live, requests"] = lambda: session.get(srv.url + "/health/live").content
                run_span[served_key] = served_span(client)
                totals, runs = interleaved_net(layers, run_span, args.reps)
        if args.cprofile:
            profile_app(call_app, args.cprofile)
    finally:
        pipeline.shutdown(timeout=5)
        for runner in runners:  # process instances: their children must not outlive the script
            runner.close()

    stage_us = {k: median_us(v) for k, v in stages.items()}
    total_us = {k: median_us(v) for k, v in totals.items()}
    net_us = {k: median_us([t - r for t, r in zip(totals[k], runs[k])]) for k in runs}
    print(
        f"rec request path: crop {width} px, {args.instance_mode} instance, thread_num {THREADS}, "
        f"engine {args.engine}; medians of {args.reps} interleaved rounds"
    )
    print(f"\n{'stage (each alone, in-process)':56s} {'median us':>10s}")
    for k, v in stage_us.items():
        print(f"  {k:54s} {v:10.1f}")
    print(
        f"\n{'layer (one request through ...)':56s} {'median us':>10s} {'minus run':>10s} {'step':>9s}"
        "\n  (minus run: each request's time less its run_batch span, collate + predictor run + uncollate)"
    )
    prev = None
    for k, v in total_us.items():
        net = net_us.get(k)
        step = "" if prev is None or net is None else f"{net - prev:+9.1f}"
        shown = "" if net is None else f"{net:10.1f}"
        print(f"  {k:54s} {v:10.1f} {shown:>10s} {step:>9s}")
        if net is not None:
            prev = net
    write_result(
        f"request_path_{args.instance_mode}",
        {"args": vars(args), "crop_width": width, "stages_us": stage_us, "layers_us": total_us, "net_us": net_us},
    )
    return 0


def interleaved_net(
    steps: dict[str, Step], spans: dict[str, Callable[[], float]], reps: int, warm: int = 5
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """:func:`interleaved` that also reads each step's run span after it (outside its timing)."""
    for name, fn in steps.items():
        for _ in range(warm):
            fn()
        if name in spans:
            spans[name]()
    names = list(steps)
    totals: dict[str, list[float]] = {n: [] for n in names}
    runs: dict[str, list[float]] = {n: [] for n in spans}
    rng = random.Random(7)
    for _ in range(reps):
        rng.shuffle(names)
        for name in names:
            t0 = time.perf_counter()
            steps[name]()
            totals[name].append(time.perf_counter() - t0)
            if name in spans:
                runs[name].append(spans[name]())
    return totals, runs


def profile_app(call_app: Step, n: int) -> None:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        call_app()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    run_main(main)
