"""Replay the real Paddle Serving 0.9's recorded requests (tests/data/paddle_serving/answers)
on batchline serving the same case folder, and compare the answers: ``err_no``, ``err_msg``,
``key`` exactly, and each value exactly, or, for OCR's lines (a Python literal of text, score
and box), the text and box exactly and the score within ``score_tol`` (batchline's default
engine, OpenVINO Runtime, is not Paddle Inference: scores differ in the last digits)."""

from __future__ import annotations

import ast
import base64
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import requests
import yaml

from serving.paddle_serving.operator import NPY_ONLY
from tests.support.paddle_serving.cases import CASES
from tuning.server import free_port

ANSWERS_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "data", "paddle_serving", "answers")
OCR_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "data", "ocr")
#: Paddle Serving's err_no for a request to a service name it does not serve (batchline: 404)
SERVICE_NAME_ERROR = 3002
#: what batchline answers on purpose where Paddle Serving answers otherwise: (case, request) -> the answer.
#: np.save bytes are loaded without unpickling (Paddle Serving unpickles them, so bytes that are not
#: .npy fail there as a pickle, naming an object's address)
ON_PURPOSE = {
    ("tensor_inputs", "bad: npy bytes that are not npy"): {
        "err_no": 8000,
        "err_msg": f"rpc package error: the byte_data of tensor x is not a whole .npy array ({NPY_ONLY})",
        "key": [],
        "value": [],
    },
}
_OPENCV_SITE = re.compile(r"OpenCV\([^)]*\) \S+:\d+:")
_NP_SCALAR = re.compile(r"np\.float(?:32|64)\(([^)]*)\)")


def answers(case: str) -> dict[str, Any]:
    with open(os.path.join(ANSWERS_DIR, f"{case}.json"), encoding="utf-8") as f:
        return json.load(f)


def set_ports(case_dir: str) -> tuple[int, int]:
    """Give a prepared case free ports (rpc, http); returns them."""
    path = os.path.join(case_dir, "config.yml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    rpc, http = free_port(), free_port()
    text = re.sub(r"(?m)^rpc_port:.*$", f"rpc_port: {rpc}", text)
    text = re.sub(r"(?m)^http_port:.*$", f"http_port: {http}", text)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    yaml.safe_load(text)  # still YAML
    return rpc, http


def sent_values(sent: dict[str, Any]) -> list[str]:
    """What was sent, with a recorded ``<base64 of ...>`` placeholder made the image again."""
    values = list(sent["value"])
    if "image" in sent:
        with open(os.path.join(OCR_DIR, sent["image"]), "rb") as f:
            image = base64.b64encode(f.read()).decode()
        values = [image if isinstance(v, str) and v.startswith("<base64 of") else v for v in values]
    return values


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(_NP_SCALAR.sub(r"\1", text))
    except (ValueError, SyntaxError):
        return None


def _close(a: Any, b: Any, tol: float) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= tol
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b))
    return a == b


def value_agrees(ours: str, theirs: str, score_tol: float) -> bool:
    if ours == theirs:
        return True
    if score_tol <= 0:
        return False
    a, b = _literal(ours), _literal(theirs)
    return a is not None and _close(a, b, score_tol)


@dataclass
class Replay:
    case: str
    problems: list[str] = field(default_factory=list)
    compared: int = 0


def _build_neutral(value: Any) -> Any:
    """An error message without the OpenCV build that raised it (its version, file and line)."""
    return _OPENCV_SITE.sub("OpenCV(*) *:*:", value) if isinstance(value, str) else value


def compare(name: str, door: str, ours: dict[str, Any], theirs: dict[str, Any], tol: float, out: Replay) -> None:
    out.compared += 1
    for key in ("err_no", "err_msg", "key"):
        if _build_neutral(ours.get(key)) != _build_neutral(theirs.get(key)):
            out.problems.append(f"{name} [{door}] {key}: ours {ours.get(key)!r}, Paddle Serving {theirs.get(key)!r}")
            return
    mine, real = ours.get("value", []), theirs.get("value", [])
    if len(mine) != len(real) or not all(value_agrees(a, b, tol) for a, b in zip(mine, real)):
        out.problems.append(f"{name} [{door}] value: ours {str(mine)[:300]}, Paddle Serving {str(real)[:300]}")


def replay_http(case: str, url: str, tol: float) -> Replay:
    """Every recorded request over HTTP to ``url`` (the server's base URL)."""
    recorded, out = answers(case), Replay(case)
    for req in recorded["requests"]:
        sent = req["sent"]
        if req["http"] is None:
            continue  # a gRPC-only request (PipelineClient's numpy arrays)
        path = req["http"].get("path") or recorded["http_path"]
        if "request" in sent:
            r = requests.post(url + path, data=json.dumps(sent["request"]), timeout=120)
        elif "raw_body" in sent:
            r = requests.post(url + path, data=sent["raw_body"].encode(), timeout=120)
            theirs = req["http"].get("json")
            if not (theirs and "err_no" in theirs) or theirs["err_no"] == SERVICE_NAME_ERROR:
                # the gateway's own refusals (its error format) and a name it does not serve (ours: 404)
                want = 404 if theirs and theirs.get("err_no") == SERVICE_NAME_ERROR else req["http"]["status"]
                out.compared += 1
                if r.status_code != want:
                    out.problems.append(f"{req['name']} [http]: status {r.status_code}, want {want}")
                continue
        else:
            body = {"key": sent["key"], "value": sent_values(sent)}
            if "logid" in sent:
                body["logid"] = sent["logid"]
            r = requests.post(url + path, data=json.dumps(body), timeout=120)
        if req["http"]["json"].get("err_no") == SERVICE_NAME_ERROR:  # a name it does not serve: ours 404
            out.compared += 1
            if r.status_code != 404:
                out.problems.append(f"{req['name']} [http]: status {r.status_code}, want 404")
            continue
        try:
            ours = r.json()
        except ValueError:
            out.problems.append(f"{req['name']} [http]: status {r.status_code}, not JSON: {r.text[:200]}")
            continue
        compare(req["name"], "http", ours, ON_PURPOSE.get((case, req["name"]), req["http"]["json"]), tol, out)
    return out


def _grpc_predict(client: Any, req: dict[str, Any]) -> Any:
    """Send a recorded request as the recorder did: key/value, numpy arrays through PipelineClient's
    tensor format, or a ``Request`` message as it is."""
    from google.protobuf import json_format

    from serving.protos import pipeline_messages

    sent = req["sent"]
    if "request" in sent:
        return client._call(json_format.ParseDict(sent["request"], pipeline_messages().Request()))
    if "arrays" in sent:
        feed = {
            key: value if isinstance(value, str) else np.array(value["data"], value["dtype"]).reshape(value["shape"])
            for key, value in sent["arrays"].items()
        }
        return client.predict(feed_dict=feed, pack_tensor_format=True, use_tensor_bytes=sent["use_tensor_bytes"])
    feed = dict(zip(sent["key"], sent_values(sent)))
    return client.predict(feed_dict=feed, fetch=req.get("grpc_fetch"), log_id=sent.get("logid", 0))


def replay_grpc(case: str, rpc_port: int, tol: float) -> Replay:
    """Every recorded request with Paddle Serving's PipelineClient (this layer's)."""
    from serving.paddle_serving.pipeline_client import PipelineClient

    recorded, out = answers(case), Replay(case)
    client = PipelineClient()
    client.connect([f"127.0.0.1:{rpc_port}"])
    for req in recorded["requests"]:
        if req.get("grpc") is None:
            continue  # an HTTP-only request
        resp = _grpc_predict(client, req)
        ours = {"err_no": resp.err_no, "err_msg": resp.err_msg, "key": list(resp.key), "value": list(resp.value)}
        compare(req["name"], "grpc", ours, ON_PURPOSE.get((case, req["name"]), req["grpc"]), tol, out)
    return out


def entry_script(case: str, case_dir: str) -> str:
    return os.path.join(case_dir, CASES[case].entry)
