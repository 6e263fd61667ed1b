"""Shared helpers for the benchmark scripts in bench/.

* configs: :func:`load_repo_config` / :func:`derive_config` write a temp YAML
  from a repo config with per-op ``local_service_conf`` overrides;
  :func:`served` starts ``batchline serve`` on it (tests/e2e ServerProcess).
* inputs: :func:`bench_documents` renders text pages (pipelines/synth.py);
  :func:`bench_crops` runs the det op over them and caches the text-line crops
  as PNGs under a temp dir (never in the repo).
* in-process: :func:`make_op` builds an op + predictor runners from a config
  exactly as the server does (same class, params, predictor settings).
* measuring: :func:`closed_loop` (client.loadgen + /metrics op stats),
  :func:`time_loop`, :func:`rss_kb`, :func:`write_result`.

Every script prints its ratio last and exits non-zero when it could not
measure (raise :class:`BenchError`).
"""

from __future__ import annotations

import contextlib
import copy
import glob
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

RESULTS_DIR = os.path.join(ROOT, "bench", "results")
CONFIG_DIR = os.environ.get("BENCH_CONFIG_DIR") or os.path.join(ROOT, "configs")
#: Paddle intra-op threads per predictor, for us and for every peer
THREADS = int(os.environ.get("BENCH_THREADS", "2"))

# CPU engine overrides for every op of a bench config ("config": as the file says)
ENGINES: dict[str, dict[str, bool]] = {
    "config": {},
    "onednn": {"use_openvino": False, "use_mkldnn": True},
    "openvino": {"use_openvino": True, "use_mkldnn": False},
    "plain": {"use_openvino": False, "use_mkldnn": False},
}


def add_engine_arg(ap: Any, default: str = "config") -> None:
    """``--engine``: the CPU engine every op of the bench config runs on."""
    ap.add_argument(
        "--engine",
        choices=sorted(ENGINES),
        default=default,
        help=f"CPU engine for every op: oneDNN, OpenVINO, plain Paddle kernels, or as the "
        f"config says (default: {default})",
    )


class BenchError(RuntimeError):
    """The benchmark could not measure what it was asked to."""


# ---------------------------------------------------------------------------
# configs
# ---------------------------------------------------------------------------
def repo_config_path(name: str) -> str:
    path = os.path.join(CONFIG_DIR, name if name.endswith(".yml") else name + ".yml")
    if not os.path.isfile(path):
        raise BenchError(f"config {path} does not exist (yet)")
    return path


def load_repo_config(name: str) -> dict:
    import yaml

    with open(repo_config_path(name), encoding="utf-8") as f:
        return yaml.safe_load(f)


def apply_overrides(
    config: Mapping[str, Any],
    ops: Mapping[str, Mapping[str, Any]] | None = None,
    all_ops: Mapping[str, Any] | None = None,
    top: Mapping[str, Any] | None = None,
    dag: Mapping[str, Any] | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict:
    """A deep copy of ``config`` with overrides applied.

    ``ops``: ``{op_name: {local_service_conf key: value}}``; ``all_ops``: keys
    set in every op's ``local_service_conf``; ``top``/``dag``: top-level and
    ``dag`` keys; ``params``: ``{op_name: {params key: value}}``. An unknown op name is an error (a typo would otherwise
    silently benchmark the unmodified config)."""
    out = copy.deepcopy(dict(config))
    op_section = out.setdefault("op", {})
    for name, conf in op_section.items():
        svc = conf.setdefault("local_service_conf", {}) or {}
        conf["local_service_conf"] = svc
        svc.update(all_ops or {})
    for name, keys in (ops or {}).items():
        if name not in op_section:
            raise BenchError(f"no op {name!r} in config (ops: {sorted(op_section)})")
        op_section[name]["local_service_conf"].update(keys)
    for name, keys in (params or {}).items():
        if name not in op_section:
            raise BenchError(f"no op {name!r} in config (ops: {sorted(op_section)})")
        op_section[name]["params"] = {**(op_section[name].get("params") or {}), **keys}
    out.update(top or {})
    if dag:
        out.setdefault("dag", {}).update(dag)
    return out


def write_config(config: Mapping[str, Any], tag: str = "bench") -> str:
    """Dump ``config`` to a temp YAML (under the configs' own tmp dir) and return its path."""
    import yaml

    fd, path = tempfile.mkstemp(prefix=f"batchline-{tag}-", suffix=".yml", dir=cache_dir("configs"))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        yaml.safe_dump(dict(config), f, sort_keys=False, allow_unicode=True)
    return path


def derive_config(base: str, *, tag: str = "bench", **overrides: Any) -> str:
    """Temp YAML path: repo config ``base`` (e.g. "rec") with :func:`apply_overrides`."""
    return write_config(apply_overrides(load_repo_config(base), **overrides), tag=tag)


def load_yaml(path: str) -> dict:
    import yaml

    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def first_op_conf(config: Mapping[str, Any], op: str) -> dict:
    return dict(config["op"][op].get("local_service_conf") or {})


# ---------------------------------------------------------------------------
# server
# ---------------------------------------------------------------------------
@contextmanager
def served(config_path: str, *, ready_timeout: float = 300.0, env: Mapping[str, str] | None = None) -> Iterator[Any]:
    """``batchline serve config_path`` on a free port; yields the ServerProcess.
    ``env``: extra environment variables for the server process."""
    from tests.support.server_process import ServerProcess

    try:
        server = ServerProcess(
            config_path, ready_timeout=ready_timeout, extra_args=("--host", "127.0.0.1"), env=dict(env or {})
        )
    except RuntimeError as exc:
        raise BenchError(f"server for {config_path} did not start: {exc}") from None
    try:
        yield server
    finally:
        stop_server(server)


def stop_server(server: Any, timeout: float = 30.0) -> None:
    """SIGTERM (drain), then kill if it does not exit in time."""
    try:
        if server.proc.poll() is None:
            server.terminate(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        server.stop()


def pipeline_name(config_path: str) -> str:
    import yaml

    with open(config_path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    return data.get("name") or os.path.splitext(os.path.basename(config_path))[0]


# ---------------------------------------------------------------------------
# in-process ops
# ---------------------------------------------------------------------------
def make_op(config_path: str, op_name: str, instances: int = 1) -> tuple[Any, list[Any]]:
    """(op, runners) built from ``config_path`` the way the server builds them."""
    from serving.config import load_config
    from serving.engine.pipeline import make_op as make_configured_op
    from serving.engine.pipeline import runners_for

    config = load_config(config_path)
    if op_name not in config.op:
        raise BenchError(f"no op {op_name!r} in {config_path}")
    op = make_configured_op(config.op[op_name])
    op.load()
    return op, runners_for(op, instances)


# ---------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------
def cache_dir(*parts: str) -> str:
    """A directory under $BENCH_CACHE (default: <tmp>/batchline-bench-cache)."""
    base = os.environ.get("BENCH_CACHE") or os.path.join(tempfile.gettempdir(), "batchline-bench-cache")
    path = os.path.join(base, *parts)
    os.makedirs(path, exist_ok=True)
    return path


def bench_documents(count: int = 24, seed: int = 7) -> list[Any]:
    """``count`` varied rendered pages (SynthDoc): the 12 sample pages, then random ones."""
    from tests.support.synth import random_document, sample_documents

    docs = list(sample_documents(seed))[:count]
    i = 0
    scripts = ("en", "zh", "mixed")
    while len(docs) < count:
        docs.append(
            random_document(
                seed * 7919 + i,
                script=scripts[i % 3],
                n_lines=3 + i % 6,
                font_size=(20, 24, 28, 32)[i % 4],
                words=(2, 7),
                name=f"r{i:02d}",
            )
        )
        i += 1
    return docs


def document_pngs(count: int = 24, seed: int = 7) -> list[bytes]:
    """PNG bytes of :func:`bench_documents`, cached on disk."""
    from tests.support.synth import encode_image

    folder = cache_dir(f"docs-{count}-{seed}")
    paths = sorted(glob.glob(os.path.join(folder, "*.png")))
    if len(paths) != count:
        for doc_i, doc in enumerate(bench_documents(count, seed)):
            with open(os.path.join(folder, f"{doc_i:03d}.png"), "wb") as f:
                f.write(encode_image(doc.image))
        paths = sorted(glob.glob(os.path.join(folder, "*.png")))
    out = []
    for p in paths:
        with open(p, "rb") as f:
            out.append(f.read())
    return out


def _config_digest(config_path: str, op: str) -> str:
    import yaml

    with open(config_path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    conf = data["op"][op]
    return hashlib.sha1(
        json.dumps(
            [conf.get("class"), conf.get("params"), conf["local_service_conf"].get("model_config")], sort_keys=True
        ).encode()
    ).hexdigest()[:10]


def crops_dir(count_docs: int = 24, seed: int = 7, det_config: str | None = None) -> str:
    """The folder of :func:`bench_crops` PNGs (created and filled if needed)."""
    bench_crops(count_docs, seed, det_config)
    return _crops_folder(count_docs, seed, det_config)


def _crops_folder(count_docs: int, seed: int, det_config: str | None) -> str:
    det_config = det_config or repo_config_path("ocr")
    return cache_dir(f"crops-{count_docs}-{seed}-{_config_digest(det_config, 'det')}")


def bench_crops(count_docs: int = 24, seed: int = 7, det_config: str | None = None) -> list[bytes]:
    """PNG bytes of text-line crops found by the det op (configs/ocr.yml) on
    :func:`bench_documents`, in page then reading order. Cached on disk."""
    det_config = det_config or repo_config_path("ocr")
    folder = _crops_folder(count_docs, seed, det_config)
    done = os.path.join(folder, "DONE")
    if not os.path.exists(done):
        import cv2
        import numpy as np

        from ops.image import crop_boxes
        from serving.engine.direct import run_op_direct

        op, runners = make_op(det_config, "det")
        k = 0
        for png in document_pngs(count_docs, seed):
            img = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
            out = run_op_direct(op, runners[0], {"input": img})
            for crop in crop_boxes(out["image"], out["boxes"], out.get("box_type", "quad")):
                ok, buf = cv2.imencode(".png", crop)
                if ok:
                    with open(os.path.join(folder, f"{k:04d}.png"), "wb") as f:
                        f.write(buf.tobytes())
                    k += 1
        if k == 0:
            raise BenchError("det found no text crop in the rendered pages")
        open(done, "w").close()
    out = []
    for p in sorted(glob.glob(os.path.join(folder, "*.png"))):
        with open(p, "rb") as f:
            out.append(f.read())
    return out


def decode_png(data: bytes) -> Any:
    import cv2
    import numpy as np

    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)


def fixed_crop(crops: Sequence[bytes]) -> bytes:
    """The crop of median width: the 'one fixed shape' input."""
    widths = sorted((decode_png(c).shape[1], i) for i, c in enumerate(crops))
    return crops[widths[len(widths) // 2][1]]


# ---------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------
def image_payloads(images: Sequence[bytes]) -> list[dict]:
    from client.pipeline_client import make_payload

    return [make_payload([("image", img)]) for img in images]


def closed_loop(
    url: str,
    name: str,
    payloads: Sequence[dict],
    concurrency: int,
    duration_s: float,
    warmup_s: float = 1.0,
    timeout: float = 60.0,
    metrics: bool = True,
) -> dict:
    """Closed loop against a batchline-compatible server (``POST /{name}/prediction``);
    returns LevelResult.to_dict() plus per-op stats from /metrics (when scrapeable)."""
    from client.bench import scrape
    from client.loadgen import run_closed_loop
    from client.pipeline_client import PipelineClient
    from client.stats import op_stats

    def factory() -> PipelineClient:
        return PipelineClient(url, timeout=timeout, pool_size=2)

    def make_request(client: PipelineClient, i: int) -> None:
        client.predict_raw(name, payloads[i % len(payloads)])

    with factory() as admin:
        before = scrape(admin) if metrics else None
        res = run_closed_loop(factory, make_request, concurrency, duration_s=duration_s, warmup_s=warmup_s)
        after = scrape(admin) if metrics else None
    if before is not None and after is not None:
        res.op_stats = op_stats(before, after)
    out = res.to_dict()
    if res.ok == 0:
        raise BenchError(f"no request to {url}/{name} succeeded (errors: {res.errors})")
    return out


def scrape_metrics(url: str) -> Any:
    """A /metrics MetricsSnapshot of the server at ``url``."""
    from client.pipeline_client import PipelineClient
    from client.stats import MetricsSnapshot

    with PipelineClient(url) as client:
        return MetricsSnapshot.from_text(client.metrics_text())


def time_loop(fn: Callable[[int], int], duration_s: float, min_calls: int = 3) -> dict:
    """Call ``fn(i)`` (returns items done) until ``duration_s`` passed and at
    least ``min_calls`` calls; returns items/s and per-call latencies."""
    lat: list[float] = []
    items = 0
    start = time.perf_counter()
    i = 0
    while True:
        t0 = time.perf_counter()
        items += fn(i)
        lat.append(time.perf_counter() - t0)
        i += 1
        if i >= min_calls and time.perf_counter() - start >= duration_s:
            break
    elapsed = time.perf_counter() - start
    from client.stats import latency_summary

    return {
        "calls": i,
        "items": items,
        "seconds": elapsed,
        "items_per_s": items / elapsed,
        "latency_ms": latency_summary(lat),
    }


def rss_kb(pid: int) -> int:
    """VmRSS of ``pid`` in kB, from /proc/<pid>/status."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchError(f"no VmRSS for pid {pid}")


def machine_info() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    import importlib.metadata as md

    def ver(pkg: str) -> str | None:
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return None

    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "paddle": ver("paddlepaddle"),
        "paddleocr": ver("paddleocr"),
        "thread_num": THREADS,
        "loadavg_at_start": load,
    }


def write_result(name: str, doc: Mapping[str, Any]) -> str:
    """Write ``doc`` (plus machine info and time) to bench/results/<name>.json."""
    os.makedirs(RESULTS_DIR, exist_ok=True)
    path = os.path.join(RESULTS_DIR, f"{name}.json")
    full = {"bench": name, "time": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine_info(), **doc}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(_json_safe(full), f, indent=2, ensure_ascii=False)
    return path


def _json_safe(obj: Any) -> Any:
    import math

    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def verdict(value: float, target: float, higher_is_better: bool = True) -> str:
    met = value >= target if higher_is_better else value <= target
    return "MET" if met else "MISSED"


def run_main(main: Callable[[], int]) -> None:
    """Run a script's main; BenchError -> message on stderr, exit 2."""
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        code = main()
    except BenchError as exc:
        sys.stderr.write(f"could not measure: {exc}\n")
        sys.exit(2)
    sys.exit(code or 0)


# ---------------------------------------------------------------------------
# PaddleOCR on another engine (diagnostics)
# ---------------------------------------------------------------------------
@contextlib.contextmanager
def paddleocr_enable_mkldnn_as(replacement: Callable[[Callable[[Any], None], Any], None]) -> Iterator[None]:
    """While active, ``paddle.inference.Config.enable_mkldnn(config)`` calls
    ``replacement(original_enable_mkldnn, config)``. PaddleOCR 2.10 builds its
    predictors with ``enable_mkldnn=True`` through that one call and has no
    switch for other engines or precisions, so this is how a bench runs
    PaddleOCR on them."""
    import paddle.inference as pi

    original = pi.Config.enable_mkldnn
    pi.Config.enable_mkldnn = lambda config: replacement(original, config)
    try:
        yield
    finally:
        pi.Config.enable_mkldnn = original


def paddleocr_engine_openvino(cache_dir: str):
    """PaddleOCR predictors built meanwhile (``enable_mkldnn=True``) get Paddle
    Inference's OpenVINO engine instead: the engine batchline's OCR configs use."""
    import paddle.inference as pi

    def enable_openvino(_original, config):
        config.enable_openvino_engine(pi.PrecisionType.Float32)
        config.set_optim_cache_dir(cache_dir)

    return paddleocr_enable_mkldnn_as(enable_openvino)
