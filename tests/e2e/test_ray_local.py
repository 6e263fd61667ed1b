"""The README's ``batchline serve configs/ocr.yml --ray`` as it is, on this
machine (2 cores in CI), with the local Ray cluster the command starts for
itself: the deployments' default CPUs (5) are fitted to the machine, so it
becomes ready and answers an OCR request; ``/health/ready`` always answers
while it starts (503 JSON until every replica runs; Ray's proxy holds a
request only while the ingress's own replica starts); and SIGTERM stops it
within a bounded time, leaving none of the processes it started. With
``ray.direct_ingress``, the same, and the ingress replica answers on its own
port too (the command logs it), past Serve's proxy."""

from __future__ import annotations

import base64
import json
import os
import time

import pytest
import requests
import yaml

from serving.rayserve import own_processes
from tests.support.ray_cluster import direct_address
from tests.support.server_process import ROOT, ServerProcess

pytestmark = pytest.mark.slow

READY_S = 300.0
READY_ANSWER_S = 30.0  # the longest one /health/ready may take: the ingress replica's start, not a hang


def page_png() -> bytes:
    import cv2
    import numpy as np

    img = np.full((120, 420, 3), 255, np.uint8)
    cv2.putText(img, "Hello Ray 2026", (10, 75), cv2.FONT_HERSHEY_SIMPLEX, 1.4, (0, 0, 0), 3)
    ok, png = cv2.imencode(".png", img)
    assert ok
    return png.tobytes()


def wait_ready(server: ServerProcess) -> list[int]:
    """Poll /health/ready until 200; every answer's status (0: connection refused, before the proxy listens)."""
    seen: list[int] = []
    end = time.monotonic() + READY_S
    while time.monotonic() < end:
        assert server.proc.poll() is None, server.log()
        try:
            answer = requests.get(f"{server.url}/health/ready", timeout=READY_ANSWER_S)
        except requests.ConnectionError:
            seen.append(0)
        except requests.Timeout:
            raise AssertionError(f"/health/ready did not answer within {READY_ANSWER_S}s:\n{server.log()}") from None
        else:
            seen.append(answer.status_code)
            if answer.status_code == 503:
                assert answer.json() == {"status": "not ready"}
            if answer.status_code == 200:
                return seen
        time.sleep(0.5)
    raise AssertionError(f"not ready within {READY_S}s (answers {sorted(set(seen))}):\n{server.log()}")


def v2_result(url: str, image: bytes):
    """The ``result`` of ``image`` through tritonclient.http (the binary tensor extension)."""
    import numpy as np
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(url.removeprefix("http://"), network_timeout=120)
    tensor = httpclient.InferInput("image", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([image], dtype=np.object_), binary_data=True)
    result = client.infer("ocr", [tensor], outputs=[httpclient.InferRequestedOutput("result", binary_data=True)])
    return json.loads(result.as_numpy("result")[0])


def ocr_config(tmp_path, direct: bool) -> str:
    """configs/ocr.yml as it is, or with ``ray.direct_ingress`` on (its model paths are ``pkg://``)."""
    path = os.path.join(ROOT, "configs", "ocr.yml")
    if not direct:
        return path
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    data["ray"] = {**(data.get("ray") or {}), "direct_ingress": True}
    out = tmp_path / "ocr.yml"
    out.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(out)


@pytest.mark.parametrize("direct", [False, True], ids=["proxy", "direct-ingress"])
def test_ocr_on_a_local_cluster_gets_ready_answers_and_stops_clean(tmp_path, direct):
    env = {"RAY_ADDRESS": "", "RAY_USAGE_STATS_ENABLED": "0"}
    config = ocr_config(tmp_path, direct)
    server = ServerProcess(config, extra_args=("--ray",), env=env, wait_ready=False)
    try:
        seen = wait_ready(server)
        assert set(seen) <= {0, 404, 503, 200}, seen  # 404: the proxy is up, the application not yet submitted
        with open(server.log_path, "rb") as log:  # the whole log: log() is its tail
            assert b"scaled down to fit" in log.read()
        body = {"key": ["image"], "value": [base64.b64encode(page_png()).decode()]}
        answer = requests.post(f"{server.url}/ocr/prediction", json=body, timeout=120)
        assert answer.status_code == 200, answer.text
        assert "Hello" in answer.json()["value"][0], answer.text
        # the Open Inference Protocol over HTTP answers through the same ingress (docs/protocols.md)
        assert v2_result(server.url, page_png()) == json.loads(answer.json()["value"][0])
        if direct:  # the same application on the replica's own port, the proxy still on the documented one
            address = direct_address(server)
            assert address != server.url
            assert requests.get(f"{address}/health/ready", timeout=READY_ANSWER_S).status_code == 200
            past_proxy = requests.post(f"{address}/ocr/prediction", json=body, timeout=120)
            assert (past_proxy.status_code, past_proxy.json()) == (200, answer.json())
        started = own_processes.descendants(server.proc.pid)  # its Ray cluster: GCS, raylet, replicas...
        assert len(started) > 3, started
        began = time.monotonic()
        assert server.terminate(timeout=90) == 0, server.log()
        assert time.monotonic() - began < 60, server.log()
        end = time.monotonic() + 10  # a process killed at the end may take a moment to go
        while own_processes.alive(started) and time.monotonic() < end:
            time.sleep(0.2)
        assert own_processes.alive(started) == [], server.log()
    finally:
        if server.proc.poll() is None:
            for pid in own_processes.descendants(server.proc.pid):
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
        server.stop()
