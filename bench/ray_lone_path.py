"""Where a lone request's time goes on the Ray backend, step by step.

One local Ray node (this machine), then sequential requests, one at a time,
the targets taken in turn (the shared machine's load falls on all alike), to
things deployed side by side, each adding one step of the path:

* ``ray null``: a bare Ray Serve deployment that reads the body and answers
  a constant: Ray's HTTP proxy and one replica hop, the floor of any Ray
  Serve app;
* ``ray null + call``: the same, plus one handle call to a second bare
  deployment carrying the body: what one op call costs Ray itself;
* ``ray ingress``: our ingress on ``GET /<app>/health/live`` (no op call):
  the proxy, the ingress's admission and its way to the app's route;
* ``ray rec``: ``configs/rec.yml`` on Ray, a lone crop (``timing`` on);
  ``single rec``: the same under ``batchline serve``;
* with ``--ocr``, ``ray ocr`` / ``single ocr``: ``configs/ocr.yml``, the
  largest sample page;
* with ``--ocr --variants`` (or ``--variants page``), ``ray ocr-page``: the same on
  Ray with det handing rec the page rather than its crops (as before issue 27);
* with ``--variants`` (or ``--variants decoded``), ``ray <p>-decoded``: each
  pipeline on Ray with the ingress decoding the image and sending the op its
  pixels rather than its file (as before issue 27); with ``--ocr`` also ``ray
  null + page pixels`` / ``file``: one bare call carrying the largest page's
  pixels, or its PNG decoded by the called deployment;
* with ``--direct-ingress``, Ray Serve's direct ingress is on
  (``RAY_SERVE_ENABLE_DIRECT_INGRESS=1``: each ingress replica also serves HTTP
  on a port of its own, 30000 and up) and every Ray target is also sent there,
  past the proxy (``... direct``), side by side with the proxy's address.

The ingress stamps its times into the answer's headers (``time.monotonic``,
one clock for the machine): client -> ingress -> Flask app -> ingress ->
client. The differences are the cost of each step. Every Ray answer is
checked against the single-process server's. ``--py-spy DIR`` also records
the ingress and the rec replica (collapsed stacks) during the requests.

    python -m bench.ray_lone_path [--requests 60] [--ocr] [--variants [page,decoded]]
        [--direct-ingress] [--py-spy DIR]
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from bench.lib.configs import apply_overrides, load_repo_config, write_config
from bench.lib.inputs import bench_crops, sample_page_pngs
from bench.lib.multi import parse_env
from bench.lib.results import write_result
from bench.lib.script import BenchError, run_main
from bench.lib.server import served, wait_ok

WARM = 5  # first requests of each target, not counted: connections, caches


def decode_png(png: bytes) -> Any:
    import cv2
    import numpy as np

    return cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_UNCHANGED)


class NullOp:
    """A deployment method that does nothing with what it gets (``run_file``: decodes it first)."""

    async def run(self, body: Any) -> int:
        return len(body)

    async def run_file(self, png: bytes) -> int:
        return len(decode_png(png))


class NullIngress:
    """Reads the body, optionally hands it to a NullOp, answers a constant JSON. ``carry``:
    ``body`` as it came; ``pixels``: the body (a PNG) decoded here; ``file``: the PNG, decoded by the op."""

    def __init__(self, op: Any = None, carry: str = "body"):
        self._op = op
        self._carry = carry

    async def __call__(self, request: Any) -> Any:
        from starlette.responses import Response

        body = await request.body()
        if self._op is None or (self._carry != "body" and not body):  # no page (a readiness GET): no call
            pass
        elif self._carry == "file":
            await self._op.run_file.remote(body)
        else:
            await self._op.run.remote(decode_png(body) if self._carry == "pixels" else body)
        return Response(b'{"ok":true}\n', media_type="application/json")


STAMPS = ("x-t-ingress-in", "x-t-app-in", "x-t-app-out", "x-t-ingress-out")


def stamped_ingress(encoded: bool = True) -> type:
    """Our ingress (``encoded``: sending images undecoded, as shipped), stamping
    ``time.monotonic()`` (one clock for every process of this machine) into the answer's
    headers: when the ingress got the request, when the Flask app started and ended it
    (absent where the app does not run), when the ingress answered."""
    from serving.rayserve.ingress import Ingress

    class StampedIngress(Ingress):
        images_travel_encoded = encoded

        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            wsgi = self.app.wsgi_app

            def app(environ: dict, start_response: Callable) -> Any:
                began = time.monotonic()

                def start(status: str, headers: list, *rest: Any) -> Any:
                    headers = [*headers, ("x-t-app-in", repr(began)), ("x-t-app-out", repr(time.monotonic()))]
                    return start_response(status, headers, *rest)

                return wsgi(environ, start)

            self.app.wsgi_app = app

        async def __call__(self, request: Any) -> Any:
            began = time.monotonic()
            response = await super().__call__(request)
            response.headers["x-t-ingress-in"] = repr(began)
            response.headers["x-t-ingress-out"] = repr(time.monotonic())
            return response

    return StampedIngress  # not importable by name: Ray's cloudpickle sends it by value


def null_apps(carry_page: bool = False) -> dict[str, Any]:
    """``carry_page``: also a page's pixels, and its file, carried by one call (``null-pixels``, ``null-file``)."""
    from ray import serve

    op = serve.deployment(NullOp).options(name="null-op", ray_actor_options={"num_cpus": 0}).bind()
    ingress = serve.deployment(NullIngress).options(name="null-ingress", ray_actor_options={"num_cpus": 0})
    apps = {"null": ingress.bind(), "null-call": ingress.bind(op)}
    if carry_page:
        apps.update({f"null-{carry}": ingress.bind(op, carry) for carry in ("pixels", "file")})
    return apps


def direct_urls(apps: list[str], proxy_port: int, timeout_s: float = 120.0) -> dict[str, str]:
    """Each application's own address under direct ingress: its ingress replica's port
    (Ray's controller reports it; a target still on ``proxy_port`` means not up yet)."""
    from serving.rayserve.direct_ingress import replica_ports, target_groups

    deadline = time.monotonic() + timeout_s
    while True:
        urls = {}
        for app in apps:
            ports = replica_ports(target_groups(app), proxy_port)
            if ports:
                urls[app] = f"http://127.0.0.1:{ports[0]}"
        if len(urls) == len(apps):
            return urls
        if time.monotonic() > deadline:
            raise BenchError(f"no direct-ingress port for {sorted(set(apps) - set(urls))}")
        time.sleep(1.0)


def lone(targets: dict[str, Callable[[Any], Any]], n: int) -> dict[str, list[tuple[float, Any]]]:
    """``n`` sequential calls per target (after ``WARM``), the targets taken in turn so that
    the shared machine's load falls on all alike: each call's wall time in ms and its answer
    (``answer.sent_at`` / ``answer.got_at``: ``time.monotonic()`` before and after)."""
    import requests

    rows: dict[str, list[tuple[float, Any]]] = {name: [] for name in targets}
    with requests.Session() as session:
        for i in range(n + WARM):
            for name, send in targets.items():
                began, sent_at = time.perf_counter(), time.monotonic()
                answer = send(session)
                wall = (time.perf_counter() - began) * 1000
                answer.sent_at, answer.got_at = sent_at, time.monotonic()
                if answer.status_code != 200:
                    raise BenchError(f"{name} answered {answer.status_code}: {answer.text[:200]}")
                if i >= WARM:
                    rows[name].append((wall, answer))
    return rows


def stamp_rows(rows: list[tuple[float, Any]]) -> dict[str, float]:
    """Medians of the segments between the client's and the stamped ingress's times, in ms."""
    parts: dict[str, list[float]] = {}
    for _, answer in rows:
        stamps = {k: float(answer.headers[k]) for k in STAMPS if k in answer.headers}
        points = [("client", answer.sent_at)] + [(k[4:], v) for k, v in stamps.items()] + [("client", answer.got_at)]
        for (a, ta), (b, tb) in zip(points, points[1:]):
            parts.setdefault(f"{a} -> {b}", []).append((tb - ta) * 1000)
    return {k: round(statistics.median(v), 2) for k, v in parts.items()}


def timing_rows(rows: list[tuple[float, Any]]) -> dict[str, float]:
    """Medians of the client's time, the engine's (ingress: admission to answer), and each
    op's time inside its stage (queue wait plus run) with their sum, in ms."""
    parts: dict[str, list[float]] = {}
    for wall, answer in rows:
        timing = answer.json()["timing"][0]
        ops = {f"{op}_ms": t["queue_wait_ms"] + t["run_ms"] for op, t in timing["ops"].items()}
        for key, ms in {"client_ms": wall, "engine_ms": timing["total_ms"], **ops}.items():
            parts.setdefault(key, []).append(ms)
        parts.setdefault("ops_ms", []).append(sum(ops.values()))
    return {k: round(statistics.median(v), 2) for k, v in parts.items()}


def pipeline_steps(name: str, on_ray: dict[str, float], single: dict[str, float]) -> dict[str, float]:
    """Where a pipeline's lone request spends its extra time on Ray, in ms. The engine's
    difference is the op calls with what they carry (and any slower op run on Ray)."""
    steps = {
        f"ray {name}: client - ingress engine (HTTP front)": on_ray["client_ms"] - on_ray["engine_ms"],
        f"single {name}: client - engine (HTTP front)": single["client_ms"] - single["engine_ms"],
        f"{name}: engine on Ray - engine single (op calls)": on_ray["engine_ms"] - single["engine_ms"],
        f"lone {name} overhead (ray - single, client p50)": on_ray["client_ms"] - single["client_ms"],
    }
    return {k: round(v, 2) for k, v in steps.items()}


def py_spy(pid: int, path: str, seconds: float) -> subprocess.Popen:
    return subprocess.Popen(
        ["py-spy", "record", "--idle", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "500"]
        + ["--format", "raw", "--output", path, "--nonblocking"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=60, help="sequential requests per target (after 5 warm-up ones)")
    ap.add_argument(
        "--ray-cpus", type=int, default=32, help="logical CPUs of the Ray node (every variant's replicas must fit)"
    )
    ap.add_argument(
        "--ray-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable for the Ray node's processes (repeatable), e.g. a RAY_SERVE_ setting",
    )
    ap.add_argument("--ocr", action="store_true", help="also a full OCR page (configs/ocr.yml) on Ray and single")
    ap.add_argument(
        "--variants",
        nargs="?",
        const="page,decoded",
        default="",
        metavar="page,decoded",
        help="also each pipeline on Ray with the ingress decoding images (and, with --ocr, det handing rec "
        "the page, not its crops), side by side",
    )
    ap.add_argument(
        "--direct-ingress",
        action="store_true",
        help="turn on Ray Serve's direct ingress and also send every Ray target to its replica's own port",
    )
    ap.add_argument("--py-spy", metavar="DIR", help="record the ingress and rec replica into DIR (collapsed stacks)")
    args = ap.parse_args()
    try:
        import ray
        from ray import serve

        from serving.config.documents import ConfigDocument
        from serving.rayserve import app as app_module
        from serving.rayserve import direct_ingress
        from serving.rayserve.run import deploy
        from tests.support.ray_cluster import LocalRayCluster
        from tests.support.server_process import free_port
    except ImportError as exc:
        raise BenchError(f"needs the ray extra: pip install -e '.[ray]' ({exc})") from None

    rec = apply_overrides(
        load_repo_config("rec"), ops={"rec": {"instance_num": 1, "thread_num": 1, "instance_mode": "process"}}
    )
    singles = {"rec": rec}
    bodies = {"rec": bench_crops()[0]}
    if args.ocr:
        singles["ocr"] = load_repo_config("ocr")
        bodies["ocr"] = sample_page_pngs()[-1]  # the largest page (1400 x 288): what image copies cost shows most
    apps = {f"{p}-ray": (p, c) for p, c in singles.items()}  # Ray application -> (pipeline, config)
    variants = set(filter(None, args.variants.split(",")))
    if variants - {"page", "decoded"}:
        raise BenchError(f"unknown variants {sorted(variants - {'page', 'decoded'})}: page, decoded")
    if "page" in variants and args.ocr:  # side by side: det handing rec the page, as before issue 27
        page = copy.deepcopy(singles["ocr"])
        page["op"]["det"]["share"] = "det-page"  # a shared op's output is never slimmed (consumers differ)
        apps["ocr-page"] = ("ocr", page)
    if "decoded" in variants:  # side by side: the ingress decoding images, as before issue 27
        apps.update({f"{p}-decoded": (p, c) for p, c in singles.items()})
    single_paths = {p: write_config(c, tag=f"lone-{p}") for p, c in singles.items()}
    bodies = {
        p: json.dumps({"inputs": [{"image": base64.b64encode(png).decode()}], "timing": True}).encode()
        for p, png in bodies.items()
    }
    headers = {"Content-Type": "application/json"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with ExitStack() as stack:
        cluster = LocalRayCluster(cpus_per_node=(args.ray_cpus,))
        cluster.env.update(parse_env(args.ray_env))
        if args.direct_ingress:
            cluster.env.update(direct_ingress.ENV)  # read by every process of the node
        cluster.start()
        stack.callback(cluster.stop)
        os.environ.update(cluster.client_env)
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        stack.callback(ray.shutdown)
        for app, (_, conf) in apps.items():
            # what build_app deploys, in this process only
            app_module.Ingress = stamped_ingress(encoded=not app.endswith("-decoded"))
            conf = dict(conf, ray={"app_name": app, "route_prefix": f"/{app}"})
            path = write_config(conf, tag=f"lone-{app}")
            deploy([ConfigDocument(path, path, conf)], host="127.0.0.1", port=port)
        carry_page = args.ocr and "decoded" in variants
        nulls = null_apps(carry_page)
        for name, app in nulls.items():
            serve.run(app, name=name, route_prefix=f"/{name}", blocking=False)
        single = {p: stack.enter_context(served(path)).url for p, path in single_paths.items()}
        for app in apps:
            wait_ok(f"{base}/{app}/health/ready")
        for name in nulls:
            wait_ok(f"{base}/{name}")
        n = args.requests

        def post(url: str, body: bytes) -> Callable[[Any], Any]:
            return lambda s: s.post(url, data=body, headers=headers, timeout=60)

        targets = {
            "ray null": post(f"{base}/null", bodies["rec"]),
            "ray null + call": post(f"{base}/null-call", bodies["rec"]),
            "ray ingress": lambda s: s.get(f"{base}/rec-ray/health/live", timeout=60),
        }
        page_png = sample_page_pngs()[-1]
        if carry_page:  # one call carrying the largest page's pixels, or its file (decoded by the op)
            targets.update({f"ray null + page {c}": post(f"{base}/null-{c}", page_png) for c in ("pixels", "file")})
        pipeline_of = {f"single {p}": p for p in singles}
        for app, (p, _) in apps.items():
            name = f"ray {p}" if app == f"{p}-ray" else f"ray {app}"
            pipeline_of[name] = p
            targets[name] = post(f"{base}/{app}/{p}/predict", bodies[p])
        if args.direct_ingress:  # the same replicas, past the proxy
            direct = direct_urls([*apps, *nulls], port)
            targets["ray null direct"] = post(f"{direct['null']}/null", bodies["rec"])
            targets["ray null + call direct"] = post(f"{direct['null-call']}/null-call", bodies["rec"])
            targets["ray ingress direct"] = lambda s: s.get(f"{direct['rec-ray']}/rec-ray/health/live", timeout=60)
            if carry_page:
                for c in ("pixels", "file"):
                    targets[f"ray null + page {c} direct"] = post(f"{direct[f'null-{c}']}/null-{c}", page_png)
            for app, (p, _) in apps.items():
                name = f"ray {p} direct" if app == f"{p}-ray" else f"ray {app} direct"
                pipeline_of[name] = p
                targets[name] = post(f"{direct[app]}/{app}/{p}/predict", bodies[p])
        for p in singles:
            targets[f"single {p}"] = post(f"{single[p]}/{p}/predict", bodies[p])
        spies = []
        if args.py_spy:
            os.makedirs(args.py_spy, exist_ok=True)
            seconds = n * 0.1 + 2
            for deployment in ("ingress", "rec-rec"):
                for pid in cluster.replicas("rec-ray", deployment):
                    spies.append(py_spy(pid, os.path.join(args.py_spy, f"{deployment}-{pid}.txt"), seconds))
        results = lone(targets, n)
        for spy in spies:
            spy.wait(timeout=120)
    for name, p in pipeline_of.items():  # Ray's answers are the single-process server's
        got, want = (results[who][0][1].json()["results"] for who in (name, f"single {p}"))
        if got != want:
            raise BenchError(f"{name} answered {got!r}, the single-process server {want!r}")

    summary: dict[str, Any] = {}
    for name, rows in results.items():
        summary[name] = {"client_p50_ms": round(statistics.median(w for w, _ in rows), 2)}
        if name in pipeline_of:
            summary[name].update(timing_rows(rows))
        if name.startswith("ray ingress") or name in pipeline_of and name.startswith("ray"):
            summary[name].update(stamp_rows(rows))
    null, call = summary["ray null"]["client_p50_ms"], summary["ray null + call"]["client_p50_ms"]
    steps = {
        "ray proxy + replica hop (ray null)": null,
        "ray handle call (null + call - null)": round(call - null, 2),
        "our ingress front, no op (ingress - null)": round(summary["ray ingress"]["client_p50_ms"] - null, 2),
    }
    suffixes = ["", " direct"] if args.direct_ingress else [""]
    for suffix in suffixes if carry_page else []:
        pixels, file = (summary[f"ray null + page {c}{suffix}"]["client_p50_ms"] for c in ("pixels", "file"))
        steps[f"a page's pixels over its file, one call{suffix} (null + page pixels - file)"] = round(pixels - file, 2)
    for p in singles:
        steps.update(pipeline_steps(p, summary[f"ray {p}"], summary[f"single {p}"]))
    for app, (p, _) in apps.items():
        if app != f"{p}-ray":  # a variant: what the change it lacks saves, client p50
            without, with_ = summary[f"ray {app}"]["client_ms"], summary[f"ray {p}"]["client_ms"]
            steps[f"ray {p}: {app} (without the change) - as shipped"] = round(without - with_, 2)
    if args.direct_ingress:
        for name in [n for n in summary if n.endswith(" direct")]:
            proxied = summary[name[: -len(" direct")]]["client_p50_ms"]
            steps[f"{name} - through the proxy"] = round(summary[name]["client_p50_ms"] - proxied, 2)
        for p in singles:
            direct = summary[f"ray {p} direct"]["client_p50_ms"] - summary[f"single {p}"]["client_p50_ms"]
            steps[f"lone {p} overhead, direct ingress (ray direct - single)"] = round(direct, 2)
    write_result("ray_lone_path", {"args": vars(args), "summary": summary, "steps_ms": steps})
    for name, row in summary.items():
        print(f"{name:16s} " + "  ".join(f"{k} {v:.2f}" for k, v in row.items()), flush=True)
    for step, ms in steps.items():
        print(f"  {step:56s} {ms:7.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    run_main(main)
