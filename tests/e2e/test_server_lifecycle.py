"""The real server process with a fake (model-free) pipeline: start-up,
answers over real HTTP, and SIGTERM under load losing nothing."""

import json
import textwrap
import threading

import pytest
import requests

from tests.support.server_process import ServerProcess

CONFIG = textwrap.dedent("""
    name: echo
    worker_num: 8
    dag: {request_timeout_ms: 20000, max_queue_size: 256}
    op:
      echo:
        class: tests.support.engine_fakes:EchoTextOp
        params: {delay_ms: 20}
        local_service_conf: {max_batch_size: 8, max_queue_delay: 5, concurrency: 2}
""")


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "echo.yml"
    path.write_text(CONFIG)
    return str(path)


def post(url, text, timeout=30):
    return requests.post(url + "/echo/prediction", data=json.dumps({"key": ["text"], "value": [text]}), timeout=timeout)


def test_sigterm_under_load_answers_every_accepted_request(config_file):
    server = ServerProcess(config_file)
    try:
        r = post(server.url, "hello")
        assert r.status_code == 200 and json.loads(r.json()["value"][0]) == {"text": "hello", "double_len": 10}
        outcomes = []
        lock = threading.Lock()
        stop_sending = threading.Event()

        def client(i):
            n = 0
            while not stop_sending.is_set() and n < 200:
                text = f"c{i}-{n}"
                try:
                    resp = post(server.url, text)
                    result = (resp.status_code, resp.json())
                except requests.ConnectionError:
                    result = ("refused", None)  # after the server closed: never accepted
                with lock:
                    outcomes.append((text, result))
                n += 1

        threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        threading.Event().wait(1.0)
        code = server.terminate(timeout=60)
        stop_sending.set()
        for t in threads:
            t.join(60)
        assert code == 0, server.log()
        ok = [(text, body) for text, (status, body) in outcomes if status == 200]
        assert len(ok) > 16
        for text, body in ok:  # every success is this client's own answer
            assert json.loads(body["value"][0])["text"] == text
        statuses = {status for _, (status, _) in outcomes}
        assert statuses <= {200, 503, "refused"}, statuses  # nothing accepted was dropped or failed
        assert "all accepted requests answered" in server.log()
    finally:
        server.stop()


def test_serve_rejects_a_bad_config(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "op:\n  echo:\n    class: tests.support.engine_fakes:EchoTextOp\n    local_service_conf: {max_batch_size: 0}\n"
    )
    with pytest.raises(RuntimeError, match="max_batch_size"):
        ServerProcess(str(bad), ready_timeout=60)


def test_body_limits_over_real_http(tmp_path):
    """Over max_body_size, just or far: waitress refuses it from Content-Length
    without buffering the body, in the protocol's JSON (regression: it used to
    read up to 1 GiB first, later up to twice the limit)."""
    path = tmp_path / "small.yml"
    path.write_text(CONFIG.replace("concurrency: 2}", "concurrency: 2, max_body_size: 4096}"))
    server = ServerProcess(str(path))
    try:
        r = requests.post(server.url + "/echo/prediction", data=b"x" * 5000, timeout=30)
        assert r.status_code == 413 and "max_body_size" in r.json()["err_msg"]
        r = requests.post(server.url + "/echo/prediction", data=b"x" * (4 << 20), timeout=30)
        assert r.status_code == 413 and "max_body_size (4096 bytes)" in r.json()["err_msg"]
        assert post(server.url, "still fine").status_code == 200
    finally:
        server.stop()
