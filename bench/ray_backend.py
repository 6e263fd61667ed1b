"""The Ray Serve backend against the single-process server, and rec with 1 vs 2 replicas.

One run, everything deployed at once on this machine and measured one after
another, the order reversed every other round:

* ``ocr single``: ``batchline serve configs/ocr.yml`` as shipped (det and rec
  2 x 1-thread instances each, pinned over the cores);
* ``ocr ray``: the same config on a local Ray cluster (``--ray``): det, rec,
  the ingress and the metrics hub as Ray Serve deployments, one replica each;
* ``rec single``: ``configs/rec.yml`` with one 1-thread process instance;
* ``rec ray x1`` / ``rec ray x2``: the same on Ray with 1 and 2 rec replicas
  (replicas of one machine pin to different cores: serving/runners/node_cpus.py).

Reported: images (pages or crops) per second under a closed loop
(``--ocr-clients``, ``--rec-clients``) and p50 of a lone sequential client,
as ratios measured side by side: Ray / single-process, and rec 2 replicas / 1.
The Ray nodes are this machine (``--ray-nodes`` raylets, one by default, each with
``--ray-cpus`` logical CPUs, so Ray's scheduling never blocks a deployment; with two,
Ray spreads the two rec replicas over them); more machines are what Ray is for,
which one machine cannot show. With ``--direct-ingress``, Ray Serve's direct
ingress is on and every Ray setup is measured on its ingress replica's own
port, past the proxy; ``ocr ray proxy`` is ``ocr ray`` through the proxy.

    python -m bench.ray_backend [--duration 12 --rounds 2 --ocr-clients 4 --rec-clients 16 --ray-nodes 1]
        [--direct-ingress]
"""

from __future__ import annotations

import argparse
import os
import time
from contextlib import ExitStack
from typing import Any

from bench.lib.configs import apply_overrides, load_repo_config, write_config
from bench.lib.inputs import bench_crops, sample_page_pngs
from bench.lib.measure import image_payloads
from bench.lib.multi import Load, concurrent_loops, fmt_ratio, op_layout, pooled, ratio
from bench.lib.results import write_result
from bench.lib.script import BenchError, run_main
from bench.lib.server import served, wait_ok

SETUPS = ("ocr single", "ocr ray", "rec single", "rec ray x1", "rec ray x2")


def configs() -> dict[str, dict[str, Any]]:
    """Each setup's config (the Ray ones with their own application name and route prefix)."""
    ocr = load_repo_config("ocr")
    # a process instance, so that replicas of one machine pin their OpenVINO threads to different cores
    rec = apply_overrides(
        load_repo_config("rec"), ops={"rec": {"instance_num": 1, "thread_num": 1, "instance_mode": "process"}}
    )

    def on_ray(base: dict, app: str, replicas: int = 1) -> dict:
        out = dict(base, ray={"app_name": app, "route_prefix": f"/{app}"})
        out["op"] = {name: dict(op) for name, op in base["op"].items()}
        if replicas > 1:
            out["op"]["rec"]["ray"] = {"num_replicas": replicas}
        return out

    return {
        "ocr single": ocr,
        "ocr ray": on_ray(ocr, "ocr-ray"),
        "rec single": rec,
        "rec ray x1": on_ray(rec, "rec-x1"),
        "rec ray x2": on_ray(rec, "rec-x2", replicas=2),
    }


def lone_breakdown(url: str, name: str, images: list[bytes], op: str, requests_n: int = 40) -> dict[str, float]:
    """Medians over sequential native requests with ``timing``: the client's wall time, the
    engine's (the ingress's on Ray: from admission to answer) and the op's predictor run, in ms."""
    import base64
    import statistics

    import requests

    rows = []
    with requests.Session() as session:
        for i in range(requests_n + 5):
            body = {"inputs": [{"image": base64.b64encode(images[i % len(images)]).decode()}], "timing": True}
            began = time.perf_counter()
            answer = session.post(f"{url}/{name}/predict", json=body, timeout=60)
            wall = (time.perf_counter() - began) * 1000
            if answer.status_code != 200:
                raise BenchError(f"{url}/{name}/predict answered {answer.status_code}: {answer.text[:200]}")
            timing = answer.json()["timing"][0]
            if i >= 5:  # the first few warm the connection
                rows.append((wall, timing["total_ms"], timing["ops"][op]["run_ms"]))
    return {key: statistics.median(r[k] for r in rows) for k, key in enumerate(("client_ms", "engine_ms", "op_run_ms"))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=float, default=12.0, help="measured seconds per round, level and setup")
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=2, help="rounds; the setup order reverses every other round")
    ap.add_argument("--ocr-clients", type=int, default=4)
    ap.add_argument("--rec-clients", type=int, default=16)
    ap.add_argument("--ray-cpus", type=int, default=16, help="logical CPUs of each Ray node")
    ap.add_argument("--ray-nodes", type=int, default=1, help="raylets of the local Ray cluster (all on this machine)")
    ap.add_argument(
        "--direct-ingress",
        action="store_true",
        help="Ray Serve's direct ingress on: the Ray setups measured past the proxy, plus ocr ray through it",
    )
    args = ap.parse_args()
    try:
        import ray

        from bench.ray_lone_path import direct_urls
        from serving.config.documents import ConfigDocument
        from serving.rayserve import direct_ingress
        from serving.rayserve.run import deploy
        from tests.support.ray_cluster import LocalRayCluster
        from tests.support.server_process import free_port
    except ImportError as exc:
        raise BenchError(f"needs the ray extra: pip install -e '.[ray]' ({exc})") from None

    confs = configs()
    setups = SETUPS + (("ocr ray proxy",) if args.direct_ingress else ())
    paths = {who: write_config(conf, tag=who.replace(" ", "-")) for who, conf in confs.items()}
    for who in SETUPS:
        print(f"{who}: {op_layout(confs[who])}", flush=True)
    payloads = {"ocr": image_payloads(sample_page_pngs()), "rec": image_payloads(bench_crops())}
    levels = {"ocr": [1, args.ocr_clients], "rec": [1, args.rec_clients]}
    port = free_port()
    results: dict[tuple[str, int], list[dict]] = {}
    started = time.monotonic()
    with ExitStack() as stack:
        cluster = LocalRayCluster(cpus_per_node=(args.ray_cpus,) * args.ray_nodes)
        if args.direct_ingress:
            cluster.env.update(direct_ingress.ENV)
        cluster.start()
        stack.callback(cluster.stop)
        os.environ.update(cluster.client_env)
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        stack.callback(ray.shutdown)
        urls: dict[str, str] = {}
        for who in SETUPS:
            if "ray" in who:
                deploy([ConfigDocument(paths[who], paths[who], confs[who])], host="127.0.0.1", port=port)
                urls[who] = f"http://127.0.0.1:{port}/{confs[who]['ray']['app_name']}"
            else:
                urls[who] = stack.enter_context(served(paths[who])).url
        for who in SETUPS:  # deploy() returns before the replicas run (and warm up): measure them running
            wait_ok(f"{urls[who]}/health/ready")
        if args.direct_ingress:  # the same applications, past the proxy; ocr also through it
            confs["ocr ray proxy"], urls["ocr ray proxy"] = confs["ocr ray"], urls["ocr ray"]
            apps = {who: confs[who]["ray"]["app_name"] for who in SETUPS if "ray" in who}
            direct = direct_urls(list(apps.values()), port)
            urls.update({who: f"{direct[app]}/{app}" for who, app in apps.items()})
        print(f"all setups up in {time.monotonic() - started:.0f} s", flush=True)
        for rnd in range(args.rounds):
            for who in setups if rnd % 2 == 0 else setups[::-1]:
                kind = who.split()[0]
                name = confs[who]["name"]
                for c in levels[kind]:
                    r = concurrent_loops([Load(who, urls[who], name, payloads[kind], c)], args.duration, args.warmup)
                    r = r[who]
                    results.setdefault((who, c), []).append(r)
                    lat = r["latency_ms"]
                    print(
                        f"round {rnd} {who:11s} {c:2d} clients: {r['qps']:6.2f}/s p50 {lat['p50']:7.1f} "
                        f"p99 {lat['p99']:7.1f} ms ({r['failed']} failed)",
                        flush=True,
                    )

        # where a lone request's time goes: HTTP in front of the engine, the engine, the op's run
        crops = bench_crops()
        breakdown = {who: lone_breakdown(urls[who], "rec", crops, "rec") for who in ("rec single", "rec ray x1")}
        for who, b in breakdown.items():
            print(
                f"{who} lone crop (median of 40): client {b['client_ms']:.1f} ms, engine {b['engine_ms']:.1f} ms, "
                f"rec run {b['op_run_ms']:.1f} ms",
                flush=True,
            )

    def pooled_at(who: str, c: int) -> dict:
        return pooled(results[(who, c)])

    oc, rc = args.ocr_clients, args.rec_clients
    summary = {
        "ocr_throughput_ray_vs_single": ratio(pooled_at("ocr ray", oc)["rate"], pooled_at("ocr single", oc)["rate"]),
        "ocr_lone_p50_ms": {w: pooled_at(w, 1)["latency_ms"]["p50"] for w in ("ocr single", "ocr ray")},
        "rec_throughput_ray_vs_single": ratio(pooled_at("rec ray x1", rc)["rate"], pooled_at("rec single", rc)["rate"]),
        "rec_throughput_x2_vs_x1": ratio(pooled_at("rec ray x2", rc)["rate"], pooled_at("rec ray x1", rc)["rate"]),
        "rec_lone_p50_ms": {w: pooled_at(w, 1)["latency_ms"]["p50"] for w in ("rec single", "rec ray x1")},
        "pooled": {f"{who} {c}": pooled(rs) for (who, c), rs in results.items()},
        "rec_lone_breakdown_ms": breakdown,
    }
    if args.direct_ingress:
        proxy_rate = pooled_at("ocr ray proxy", oc)["rate"]
        summary["ocr_throughput_ray_proxy_vs_single"] = ratio(proxy_rate, pooled_at("ocr single", oc)["rate"])
    ocr_lone, rec_lone = summary["ocr_lone_p50_ms"], summary["rec_lone_p50_ms"]
    summary["ocr_lone_overhead_ms"] = ocr_lone["ocr ray"] - ocr_lone["ocr single"]
    summary["rec_lone_overhead_ms"] = rec_lone["rec ray x1"] - rec_lone["rec single"]
    write_result(
        "ray_backend",
        {
            "args": vars(args),
            "layouts": {who: op_layout(confs[who]) for who in setups},
            "summary": summary,
            "rounds": {
                f"{who} {c}": [{k: v for k, v in r.items() if k != "latencies_s"} for r in rs]
                for (who, c), rs in results.items()
            },
        },
    )
    print(
        f"\nfull OCR, {oc} clients: Ray / single-process {fmt_ratio(summary['ocr_throughput_ray_vs_single'])} "
        f"pages/s; lone request p50 {ocr_lone['ocr single']:.1f} -> {ocr_lone['ocr ray']:.1f} ms "
        f"(+{summary['ocr_lone_overhead_ms']:.1f} ms, two op calls)\n"
        f"rec, {rc} clients: Ray 1 replica / single-process {fmt_ratio(summary['rec_throughput_ray_vs_single'])}, "
        f"Ray 2 replicas / 1 replica {fmt_ratio(summary['rec_throughput_x2_vs_x1'])} crops/s; lone crop p50 "
        f"{rec_lone['rec single']:.1f} -> {rec_lone['rec ray x1']:.1f} ms (+{summary['rec_lone_overhead_ms']:.1f} ms, "
        "one op call)",
        flush=True,
    )
    if args.direct_ingress:
        proxied = summary["ocr_throughput_ray_proxy_vs_single"]
        print(f"(Ray setups past the proxy; full OCR through it: {fmt_ratio(proxied)})", flush=True)
    return 0


if __name__ == "__main__":
    run_main(main)
