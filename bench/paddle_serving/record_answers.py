"""Record what the REAL Paddle Serving 0.9.0 answers on each case of
``tests/data/paddle_serving/cases/`` (issue 36): the reference batchline's Paddle
Serving layer is held to.

For each case: a temp copy with its model folders written in
(``tests/support/paddle_serving/cases.py``), the user's entry script started by the
reference venv's python (``bench/lib/paddle_serving_venv.py``) in that folder, then
every request sent over HTTP (``POST http://127.0.0.1:<http_port>/<name>/prediction``
with ``{"key": [...], "value": [...]}``, through Paddle Serving's Go gateway) and over
gRPC (its own ``PipelineClient`` on ``rpc_port``), by ``ref_client.py`` in the same
venv. Written: ``tests/data/paddle_serving/answers/<case>.json``: per request what
was sent (an image's file name, or the literal key/value) and both doors' full
answers (HTTP status + JSON body; err_no, err_msg, key, value), with timings.

    python -m bench.paddle_serving.record_answers [--only ocr,prod_errors] [--keep]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench.lib.paths import ROOT, cache_dir
from bench.lib.script import BenchError, chosen, run_main

ANSWERS_DIR = os.path.join(ROOT, "tests", "data", "paddle_serving", "answers")
OCR_DATA = os.path.join(ROOT, "tests", "data", "ocr")
CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ref_client.py")

# uci housing inputs (13 floats): the one of Paddle Serving's simple_web_service README, and others
X1 = "0.0137, -0.1136, 0.2553, -0.0692, 0.0582, -0.0727, -0.1583, -0.0584, 0.6283, 0.4919, 0.1856, 0.0795, -0.0332"
X2 = "0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3"
X3 = "-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1"
X4 = "0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0"
X12 = "0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2"


def kv(name: str, pairs: dict[str, str], *, group: int | None = None, fetch: list[str] | None = None) -> dict:
    """A request sent the same way through both doors: key/value strings."""
    return {
        "name": name,
        "sent": {"key": list(pairs), "value": list(pairs.values())},
        "group": group,
        "http_body": json.dumps({"key": list(pairs), "value": list(pairs.values())}),
        "feed_dict": pairs,
        "fetch": fetch,
    }


def http_only(name: str, body: str, path: str | None = None) -> dict:
    """A request only HTTP can send (a malformed body, another path)."""
    return {"name": name, "sent": {"raw_body": body, "path": path}, "group": None, "http_body": body, "path": path}


def tensors(name: str, request: dict, *, group: int | None = None) -> dict:
    """A request in Paddle Serving's ``Request`` message, as proto3 JSON: the HTTP body, and over
    gRPC the same message sent as it is (``PipelineService.inference``), however malformed."""
    return {"name": name, "sent": {"request": request}, "group": group, "http_body": json.dumps(request)}


def arrays(name: str, values: dict, *, use_tensor_bytes: bool = False) -> dict:
    """numpy arrays (``{"dtype", "shape", "data"}``) sent by Paddle Serving's own PipelineClient with
    ``pack_tensor_format=True``: gRPC only (its HTTP client has no tensor format)."""
    sent = {"arrays": values, "pack_tensor_format": True, "use_tensor_bytes": use_tensor_bytes}
    return {"name": name, "sent": sent, "group": None, "http_body": None}


def npy_base64(array: np.ndarray) -> str:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode()


def tensor_requests() -> list[dict]:
    def one(**tensor: object) -> dict:
        return {"tensors": [{"name": "x", **tensor}]}

    floats = [0.5, -1.25, 3.0, 1e-3, 65504.0, 0.1]
    npy = npy_base64(np.array([[1.5, 2.5], [3.5, 4.5]], "float32"))
    row = {"dtype": "float32", "shape": [1, 3], "data": [0.25, 0.5, 0.75]}
    return [
        tensors("float32 2x3", one(elem_type=1, shape=[2, 3], float_data=floats)),
        tensors("int64 3", one(elem_type=0, shape=[3], int64_data=[1, -2, 9007199254740993])),
        tensors("int32 1x2", one(elem_type=2, shape=[1, 2], int_data=[7, -8])),
        tensors("float64 2", one(elem_type=3, shape=[2], float64_data=[0.1, -2.5e300])),
        tensors("int16 2 (wraps)", one(elem_type=4, shape=[2], int_data=[40000, -3])),
        tensors("float16 3", one(elem_type=5, shape=[3], float_data=[0.1, 70000.0, -2.0])),
        tensors("bf16 as uint16 2", one(elem_type=6, shape=[2], uint32_data=[16256, 70000])),
        tensors("uint8 2x2", one(elem_type=7, shape=[2, 2], uint32_data=[0, 255, 256, 3])),
        tensors("int8 2", one(elem_type=8, shape=[2], int_data=[-128, 200])),
        tensors("bool 3", one(elem_type=9, shape=[3], bool_data=[True, False, True])),
        tensors("string tensor, joined", one(elem_type=12, str_data=["ab", "cd"])),
        tensors("npy bytes 2x2", one(elem_type=13, byte_data=npy)),
        tensors("lod", one(elem_type=1, shape=[4, 1], float_data=[1, 2, 3, 4], lod=[0, 2, 0, 4])),
        tensors("no shape, one element", one(elem_type=1, float_data=[2.5])),
        tensors("no shape, no data", one(elem_type=2)),
        tensors(
            "two tensors and a key",
            {
                "key": ["note"],
                "value": ["kept"],
                "tensors": [
                    {"name": "a", "elem_type": 2, "shape": [2], "int_data": [1, 2]},
                    {"name": "b", "elem_type": 12, "str_data": ["text"]},
                ],
            },
        ),
        tensors("a tensor without a name", {"tensors": [{"elem_type": 2, "shape": [1], "int_data": [5]}]}),
        tensors("bad: shape does not fit the data", one(elem_type=1, shape=[3], float_data=[1, 2])),
        tensors("bad: lod of odd length", one(elem_type=1, shape=[2], float_data=[1, 2], lod=[0, 1, 2])),
        tensors("bad: complex64 (elem_type 10)", one(elem_type=10, shape=[1], float_data=[1])),
        tensors("bad: elem_type 99", one(elem_type=99, shape=[1], float_data=[1])),
        tensors("bad: npy bytes that are not npy", one(elem_type=13, byte_data=base64.b64encode(b"not npy").decode())),
        arrays("PipelineClient float32 2x13", {"x": dict(row, shape=[2, 13], data=[i / 8 for i in range(26)])}),
        arrays("PipelineClient int64 and a str", {"ids": dict(row, dtype="int64", data=[3, 1, 4]), "s": "text"}),
        arrays("PipelineClient use_tensor_bytes", {"x": row}, use_tensor_bytes=True),
    ]


def images() -> list[str]:
    names = []
    for sub in ("sample", "short", "invoice"):
        names += [f"{sub}/{n}" for n in sorted(os.listdir(os.path.join(OCR_DATA, sub))) if n.endswith(".png")]
    return names


def ocr_requests() -> list[dict]:
    out = []
    for name in images():
        with open(os.path.join(OCR_DATA, name), "rb") as f:
            b64 = base64.b64encode(f.read()).decode("utf8")
        req = kv(name, {"image": b64}, fetch=["res"])  # fetch=["res"] as the examples' rpc client
        req["sent"] = {"key": ["image"], "value": [f"<base64 of tests/data/ocr/{name}>"], "image": name}
        out.append(req)
    out.append(kv("bad: not an image", {"image": base64.b64encode(b"hello, not a png").decode()}, fetch=["res"]))
    out.append(kv("bad: not base64", {"image": "###"}, fetch=["res"]))
    out.append(kv("bad: no image key", {"img": "aGVsbG8="}, fetch=["res"]))
    return out


def uci_requests() -> list[dict]:
    return [
        kv("one row", {"x": X1}),
        kv("another row", {"x": X2}),
        kv("two rows (';')", {"x": X1 + ";" + X2}),
        kv("bad: 12 numbers", {"x": X12}),
        kv("bad: not a number", {"x": "abc"}),
        kv("bad: no x key", {"y": X1}),
    ]


def malformed() -> list[dict]:
    return [
        http_only("http: body not JSON", "this is not json"),
        http_only("http: empty body", ""),
        http_only("http: JSON without key/value", json.dumps({"x": X1})),
        http_only("http: key/value lengths differ", json.dumps({"key": ["x", "y"], "value": [X1]})),
        http_only("http: value not a string", json.dumps({"key": ["x"], "value": [1.5]})),
        http_only("http: logid given", json.dumps({"key": ["x"], "value": [X1], "logid": 12345})),
        http_only("http: wrong service name", json.dumps({"key": ["x"], "value": [X1]}), "/nosuchservice/prediction"),
        http_only("http: bare /prediction", json.dumps({"key": ["x"], "value": [X1]}), "/prediction"),
    ]


def case_requests(case: str) -> list[dict]:
    if case in ("ocr", "pdserving"):
        return ocr_requests()
    if case == "simple_web_service":
        return uci_requests() + malformed()
    if case in ("thread_ops", "process_ops"):
        return uci_requests()
    if case == "auto_batching":
        return [
            kv("lone request", {"x": X1}),
            *[kv(f"4 at once #{i}", {"x": x}, group=1) for i, x in enumerate((X1, X2, X3, X4))],
            kv("3 at once, 2 rows #0", {"x": X1 + ";" + X2}, group=2),
            kv("3 at once, 2 rows #1", {"x": X3}, group=2),
            kv("3 at once, 2 rows #2", {"x": X4}, group=2),
            kv("4 at once, one bad #0", {"x": X1}, group=3),
            kv("4 at once, one bad #1", {"x": X12}, group=3),
            kv("4 at once, one bad #2", {"x": X2}, group=3),
            kv("4 at once, one bad #3", {"x": X3}, group=3),
            *[kv(f"6 at once #{i}", {"x": x}, group=4) for i, x in enumerate((X1, X2, X3, X4, X1, X2))],
        ]
    if case == "skip_process":
        return [
            kv("model runs", {"x": X1}),
            kv("skip", {"skip": "no model please"}),
            kv("skip with x too", {"skip": "s", "x": X1}),
        ]
    if case == "prod_errors":
        return [
            kv("ok", {"mode": "ok", "text": "hello"}),
            kv("prod error in preprocess", {"mode": "pre"}),
            kv("prod errcode 0 in preprocess", {"mode": "zero"}),
            kv("exception in preprocess", {"mode": "raise"}),
            kv("prod error in postprocess", {"mode": "post"}),
            kv("exception in postprocess", {"mode": "post_raise"}),
            kv("non-str value in the response dict", {"mode": "nonstr", "text": "four"}),
            kv("no mode key", {"text": "x"}),
        ]
    if case == "no_model":
        return [
            kv("two keys", {"a": "hello", "b": "World"}),
            kv("one key", {"word": "mixed Case"}),
            kv("no keys", {}),
        ]
    if case == "custom_request_response":
        return [
            kv("text", {"text": "hello big world"}),
            kv("text and other keys", {"text": "one", "other": "kept"}),
            kv("no text: prod error from unpack_request_package", {"other": "x"}),
            http_only("http: wrong service name", json.dumps({"key": ["text"], "value": ["a"]}), "/wrong/prediction"),
        ]
    if case == "two_inputs":
        return [
            kv("both inputs", {"a": "left side", "x": X1}),
            kv("bad: no a (left fails)", {"x": X1}),
            kv("bad: no x (right fails)", {"a": "only a"}),
        ]
    if case == "tensor_inputs":
        return tensor_requests()
    if case == "bert":  # the example's keys: "0", "1", ... one text each
        return [
            kv("one text", {"0": "今天天气很好"}),
            kv("two texts", {"0": "北京是中国的首都", "1": "Hello, world! 你好"}),
            kv("mixed, accents and punctuation", {"0": "Café ÜBER 1,234.5 —— 《测试》！"}),
            kv("a text longer than 128 tokens", {"0": "中文文本" * 60}),
            kv("empty text", {"0": ""}),
            kv("bad: key is not '0'", {"text": "你好"}),
            kv("bad: no keys", {}),
        ]
    if case == "imdb_model_ensemble":
        return [
            kv("sad", {"words": "i am very sad | 0"}, fetch=["prediction"]),
            kv("great", {"words": "this movie is great | 1"}, fetch=["prediction"]),
            kv("unknown words", {"words": "zzz qqq | 0"}, fetch=["prediction"]),
            kv("bad: no label", {"words": "no label here"}, fetch=["prediction"]),
            kv("bad: no words key", {"other": "x"}, fetch=["prediction"]),
            http_only("http: /imdb/prediction", json.dumps({"key": ["words"], "value": ["i am very sad | 0"]})),
        ]
    raise BenchError(f"no requests for case {case}")


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def stop(proc: subprocess.Popen) -> None:
    """End the server we started and what it started (its own process group)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)


def record_case(case_name: str, python: str, keep: bool) -> dict:
    from tests.support.paddle_serving.cases import CASES, ports, prepare_case

    case = CASES[case_name]
    tmp = tempfile.mkdtemp(prefix=f"ps-{case_name}-")
    t0 = time.perf_counter()
    folder = prepare_case(case_name, tmp, python)
    prepare_s = time.perf_counter() - t0
    rpc_port, http_port = ports(folder)
    busy = [p for p in (rpc_port, http_port) if port_open(p)]
    if busy:
        raise BenchError(f"{case_name}: ports {busy} already in use")
    log_path = os.path.join(cache_dir("logs", "paddle_serving"), f"{case_name}.log")
    print(f"[{case_name}] serving from {folder} (rpc {rpc_port}, http {http_port}); log {log_path}", flush=True)
    log = open(log_path, "wb")  # noqa: SIM115 (open while the server runs)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [python, case.entry], cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 180
        while not (port_open(rpc_port) and port_open(http_port)):
            if proc.poll() is not None:
                raise BenchError(f"{case_name}: the server exited ({proc.returncode}); see {log_path}")
            if time.monotonic() > deadline:
                raise BenchError(f"{case_name}: ports not open after 180 s; see {log_path}")
            time.sleep(0.3)
        ports_s = time.perf_counter() - t0
        time.sleep(3)  # op processes finish loading their models
        requests = case_requests(case_name)
        default_path = f"/{case.service}/prediction" if case.service else "/imdb/prediction"
        job = {"rpc_port": rpc_port, "http_port": http_port, "requests": []}
        for req in requests:
            item: dict = {"group": req["group"]}
            if req["http_body"] is not None:
                item["http"] = {"path": req.get("path") or default_path, "body": req["http_body"]}
            if "feed_dict" in req:
                item["grpc"] = {"feed_dict": req["feed_dict"], "fetch": req["fetch"]}
            elif "arrays" in req["sent"]:
                item["grpc"] = {"arrays": req["sent"]["arrays"], "use_tensor_bytes": req["sent"]["use_tensor_bytes"]}
            elif "request" in req["sent"]:
                item["grpc"] = {"request": req["sent"]["request"]}
            job["requests"].append(item)
        t1 = time.perf_counter()
        out = subprocess.run(  # cwd: PipelineClient writes PipelineServingLogs/ where it runs
            [python, CLIENT], input=json.dumps(job), capture_output=True, text=True, timeout=1800, cwd=tmp
        )
        requests_s = time.perf_counter() - t1
        if "@@ANSWERS@@" not in out.stdout:
            raise BenchError(f"{case_name}: the client failed: {out.stderr[-2000:]}")
        answers = json.loads(out.stdout.split("@@ANSWERS@@", 1)[1])
        alive = proc.poll() is None
    finally:
        stop(proc)
        log.close()
    rows = []
    for i, req in enumerate(requests):
        row = {"name": req["name"], "sent": req["sent"]}
        if req["group"] is not None:
            row["concurrent_group"] = req["group"]
        if req.get("fetch"):
            row["grpc_fetch"] = req["fetch"]
        row["http"] = answers["http"][i]
        row["grpc"] = answers["grpc"][i]
        rows.append(row)
    if not keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "case": case_name,
        "entry": case.entry,
        "http_path": f"/{case.service}/prediction" if case.service else None,
        "rpc_port": rpc_port,
        "http_port": http_port,
        "timing_s": {
            "prepare_models": round(prepare_s, 2),
            "start_to_ports_open": round(ports_s, 2),
            "requests_both_doors": round(requests_s, 2),
        },
        "server_alive_after": alive,
        "requests": rows,
    }


def reference_versions(python: str) -> dict:
    from bench.lib import venvs

    names = ["paddle-serving-server", "paddle-serving-app", "paddle-serving-client", "paddlepaddle", "numpy"]
    names += ["protobuf", "grpcio", "opencv-python-headless", "Flask"]
    out = venvs.installed_versions(python, names)
    out["python"] = subprocess.run(
        [python, "-c", "import sys;print(sys.version.split()[0])"], capture_output=True, text=True
    ).stdout.strip()
    out["machine"] = f"{platform.machine()}, {os.cpu_count()} cores"
    return out


def main() -> int:
    from bench.lib.paddle_serving_venv import ensure_venv
    from tests.support.paddle_serving.cases import CASES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--keep", action="store_true", help="keep the temp case folders")
    args = parser.parse_args()
    python, _ = ensure_venv()
    versions = reference_versions(python)
    os.makedirs(ANSWERS_DIR, exist_ok=True)
    failed = []
    for name in chosen(args.only, list(CASES)):
        t0 = time.perf_counter()
        try:
            result = record_case(name, python, args.keep)
        except BenchError as exc:
            print(f"[{name}] FAILED: {exc}", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        result["timing_s"]["total"] = round(time.perf_counter() - t0, 2)
        result["reference"] = versions
        path = os.path.join(ANSWERS_DIR, f"{name}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(result, f, ensure_ascii=False, indent=1)
            f.write("\n")
        errs = sum(1 for r in result["requests"] if (r["grpc"] or {}).get("err_no"))
        print(f"[{name}] {len(result['requests'])} requests, {errs} gRPC err_no != 0, {result['timing_s']} -> {path}")
    if failed:
        raise BenchError(f"cases that could not be recorded: {failed}")
    return 0


if __name__ == "__main__":
    run_main(main)
