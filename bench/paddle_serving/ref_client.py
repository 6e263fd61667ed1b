"""Client side of ``record_answers.py``, run by the REFERENCE venv's python (it needs
Paddle Serving's own ``PipelineClient``; stdlib otherwise). Reads a job as JSON on
stdin, sends each request over HTTP (``urllib``, to the Go gateway on ``http_port``)
and over gRPC (``PipelineClient`` on ``rpc_port``), and writes the answers as JSON
after a ``@@ANSWERS@@`` marker (``PipelineClient.predict`` prints to stdout).

Job: ``{"rpc_port", "http_port", "requests": [{"group", "http": {"path", "body"},
"grpc": {"feed_dict", "fetch"}}]}``; requests sharing a non-null ``group`` are sent
concurrently (one thread each), door by door; the others one after another. A gRPC request
may instead be ``{"arrays": {key: {"dtype", "shape", "data"} or a str}, "use_tensor_bytes"}``
(numpy arrays, sent by ``PipelineClient.predict(..., pack_tensor_format=True)``) or
``{"request": <a Request message as proto3 JSON>}`` (sent as it is); either side may be absent.
"""

# PipelineClient is imported in the main thread: paddle_serving_server's serve.py
# installs a SIGINT handler when imported (workaround 10 of the doc)
from paddle_serving_server.pipeline import PipelineClient  # noqa: I001

import json
import sys
import threading
import time
import urllib.error
import urllib.request


def http_call(port: int, spec: dict) -> dict:
    url = f"http://127.0.0.1:{port}{spec['path']}"
    body = spec["body"].encode("utf-8")
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            status, raw, ctype = resp.status, resp.read(), resp.headers.get("Content-Type")
    except urllib.error.HTTPError as exc:
        status, raw, ctype = exc.code, exc.read(), exc.headers.get("Content-Type")
    except Exception as exc:  # noqa: BLE001 (recorded as the answer)
        return {"path": spec["path"], "exception": f"{type(exc).__name__}: {exc}"}
    ms = (time.perf_counter() - start) * 1000
    out = {"path": spec["path"], "status": status, "content_type": ctype, "ms": round(ms, 1)}
    text = raw.decode("utf-8", "replace")
    try:
        out["json"] = json.loads(text)
    except ValueError:
        out["body"] = text
    return out


def _predict(client: PipelineClient, spec: dict):
    if "request" in spec:
        from google.protobuf import json_format
        from paddle_serving_server.pipeline.proto import pipeline_service_pb2

        request = json_format.ParseDict(spec["request"], pipeline_service_pb2.Request())
        return client._stub.inference(request)
    if "arrays" in spec:
        import numpy as np

        feed = {
            key: value if isinstance(value, str) else np.array(value["data"], value["dtype"]).reshape(value["shape"])
            for key, value in spec["arrays"].items()
        }
        return client.predict(feed_dict=feed, pack_tensor_format=True, use_tensor_bytes=spec["use_tensor_bytes"])
    return client.predict(feed_dict=dict(spec["feed_dict"]), fetch=spec.get("fetch"))


def grpc_call(client: PipelineClient, spec: dict) -> dict:
    start = time.perf_counter()
    try:
        resp = _predict(client, spec)
    except Exception as exc:  # noqa: BLE001 (recorded as the answer)
        return {"exception": f"{type(exc).__name__}: {exc}"}
    ms = (time.perf_counter() - start) * 1000
    return {
        "err_no": resp.err_no,
        "err_msg": resp.err_msg,
        "key": list(resp.key),
        "value": list(resp.value),
        "tensors": len(resp.tensors),
        "ms": round(ms, 1),
    }


def run_door(door: str, job: dict, client: PipelineClient) -> list:
    requests = job["requests"]
    answers: list = [None] * len(requests)

    def one(i: int) -> None:
        spec = requests[i].get(door)
        if spec is None:
            answers[i] = None
        elif door == "http":
            answers[i] = http_call(job["http_port"], spec)
        else:
            answers[i] = grpc_call(client, spec)

    i = 0
    while i < len(requests):
        group = requests[i].get("group")
        if group is None:
            one(i)
            i += 1
            continue
        members = []
        while i < len(requests) and requests[i].get("group") == group:
            members.append(i)
            i += 1
        threads = [threading.Thread(target=one, args=(k,)) for k in members]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return answers


def main() -> None:
    job = json.load(sys.stdin)
    client = PipelineClient()
    client.connect([f"127.0.0.1:{job['rpc_port']}"])
    http = run_door("http", job, client)
    grpc = run_door("grpc", job, client)
    sys.stdout.write("\n@@ANSWERS@@" + json.dumps({"http": http, "grpc": grpc}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
