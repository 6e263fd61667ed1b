"""``http.front_workers``: front processes on the server's port, one engine
behind them. The real server (``Server.run``, as ``batchline serve`` runs it)
with two front processes: same answers as the one-process server, auth and
limits at the fronts, one /metrics, reloads reaching every front, a drain that
answers what was accepted, and a front that dies started again."""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
import yaml

from serving.config import parse_config
from serving.config.file_set import load_repository, repository_of
from tests.support.client_fakes import BAD, BOOM, HOLD, OVERLOADED, ocr_config, text_config
from tests.support.image_fakes import encode_png
from tests.support.live_app import LiveApp

TOKEN = "front-token"
COUNTER = "batchline_requests_total{"


def call(
    live: LiveApp, method: str, path: str, body: bytes | None = None, token: str | None = TOKEN
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", live.server.port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    answer = r.status, r.read()
    conn.close()
    return answer


def paddle(*texts: str, logid: int = 1) -> bytes:
    return json.dumps({"key": ["text"] * len(texts), "value": list(texts), "logid": logid}).encode()


@pytest.fixture(scope="module")
def fronts(tmp_path_factory) -> Iterator[LiveApp]:
    path = tmp_path_factory.mktemp("fronts") / "ernie.yml"  # a file: SIGHUP re-reads it
    path.write_text(yaml.safe_dump(text_config(auth_token=TOKEN)))
    with LiveApp(load_repository([str(path)]), front_workers=2) as live:
        yield live


def test_the_fronts_are_processes_of_their_own(fronts):
    pids = fronts.server.fronts.pids
    assert len(pids) == 2 and os.getpid() not in pids
    assert fronts.server.front is None  # no waitress in the engine's process


def test_answers_are_the_one_process_servers_byte_for_byte(fronts):
    requests = [
        ("POST", "/ernie/prediction", paddle("good day", "bad day", logid=5)),
        ("POST", "/ernie/predict", json.dumps({"inputs": [{"text": "good"}]}).encode()),
        ("POST", "/ernie/prediction", paddle("__bad__")),
        ("POST", "/ernie/prediction", b"{"),
        ("POST", "/ernie/prediction", paddle(*["x"] * 5)),
        ("POST", "/ernie/prediction", b"x" * (2 << 20)),  # over max_body_size: waitress refuses it unread
        ("POST", "/nope/prediction", paddle("x")),
        ("GET", "/pipelines", None),
        ("GET", "/ernie/config", None),
    ]
    with LiveApp(fronts.server.config) as single:
        want = [call(single, *r) for r in requests]
    got = [call(fronts, *r) for r in requests]
    assert got == want


def one_text(text: str, **fields) -> bytes:
    return json.dumps({"key": ["text"], "value": [text], **fields}).encode()


LOOP_ROUTE_REQUESTS = {  # a front answers a one-text prediction on its loop (serving.http.loop_route)
    "good": ("/ernie/prediction", one_text("good", logid=7), TOKEN),
    "string logid": ("/ernie/prediction", one_text("好", logid="abc"), TOKEN),
    "no logid": ("/ernie/prediction", one_text("bad"), TOKEN),
    "priority": ("/ernie/prediction", one_text("good", priority=1), TOKEN),
    "priority out of range": ("/ernie/prediction", one_text("good", priority=9), TOKEN),
    "bad input": ("/ernie/prediction", one_text(BAD, logid=3), TOKEN),
    "predictor failure": ("/ernie/prediction", one_text(BOOM), TOKEN),
    "overloaded": ("/ernie/prediction", one_text(OVERLOADED), TOKEN),
    "version": ("/ernie/v1/prediction", one_text("good"), TOKEN),
    "no such version": ("/ernie/v9/prediction", one_text("good"), TOKEN),
    "encoded path": ("/er%6Eie/prediction", one_text("good"), TOKEN),
    "empty body": ("/ernie/prediction", b"", TOKEN),
    "not an object": ("/ernie/prediction", b"[1]", TOKEN),
    "value not text": ("/ernie/prediction", json.dumps({"key": ["text"], "value": [5]}).encode(), TOKEN),
    "no token, no body": ("/ernie/prediction", None, None),
    "wrong token, no body": ("/ernie/prediction", None, "nope"),
    "two texts": ("/ernie/prediction", paddle("good", "bad"), TOKEN),
}


def full_call(live: LiveApp, path: str, body: bytes | None, token: str | None) -> tuple[int, list, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", live.server.port, timeout=30)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    conn.request("POST", path, body=body, headers=headers)
    r = conn.getresponse()
    answer = r.status, sorted(h for h in r.getheaders() if h[0] != "Date"), r.read()
    conn.close()
    return answer


def test_the_loop_route_answers_as_the_one_process_server_headers_and_all(fronts):
    names = sorted(LOOP_ROUTE_REQUESTS)
    with LiveApp(fronts.server.config) as single:
        want = {n: full_call(single, *LOOP_ROUTE_REQUESTS[n]) for n in names}
    got = {n: full_call(fronts, *LOOP_ROUTE_REQUESTS[n]) for n in names}
    assert got == want
    expected = {"good": 200, "bad input": 400, "predictor failure": 500, "overloaded": 503, "no token, no body": 401}
    assert {n: want[n][0] for n in expected} == expected


def test_the_fronts_check_the_token(fronts):
    status, body = call(fronts, "POST", "/ernie/prediction", paddle("good"), token=None)
    assert status == 401 and b"token" in body.lower()
    assert call(fronts, "GET", "/health/ready", token=None)[0] == 200


def test_many_clients_at_once_are_all_answered_through_both_fronts(fronts):
    answers: list[tuple[int, bytes]] = []

    def client(i: int) -> None:
        for j in range(10):
            answers.append(call(fronts, "POST", "/ernie/prediction", paddle("good" if (i + j) % 2 else "bad", logid=i)))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 160 and {status for status, _ in answers} == {200}
    labels = {json.loads(json.loads(body)["value"][0])["label"] for _, body in answers}
    assert labels == {"positive", "negative"}


def test_one_metrics_for_the_whole_server(fronts):
    def requests_counted() -> float:
        text = call(fronts, "GET", "/metrics")[1].decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(COUNTER))

    before = requests_counted()
    for _ in range(4):  # the kernel spreads connections over both fronts: both must count in one place
        call(fronts, "POST", "/ernie/prediction", paddle("good"))
    assert requests_counted() == before + 4


def test_a_reload_reaches_every_front(fronts):
    gen = fronts.repository.generation.number
    fronts.server.reload_in_background().join(30)
    assert fronts.repository.generation.number == gen + 1
    readies = {json.loads(call(fronts, "GET", "/health/ready")[1])["generation"] for _ in range(8)}
    assert readies == {gen + 1}


def test_a_killed_front_is_started_again(fronts):
    victim = fronts.server.fronts.pids[0]
    os.kill(victim, signal.SIGKILL)
    end = time.monotonic() + 30
    while victim in fronts.server.fronts.pids or len(fronts.server.fronts.pids) != 2:
        assert time.monotonic() < end, "the front was not started again"
        time.sleep(0.1)
    for _ in range(6):
        assert call(fronts, "POST", "/ernie/prediction", paddle("good"))[0] == 200


def test_images_are_decoded_in_the_fronts_and_answered():
    image = np.full((40, 60, 3), 200, dtype=np.uint8)
    body = json.dumps({"key": ["image"], "value": [base64.b64encode(encode_png(image)).decode()]}).encode()
    with LiveApp(ocr_config(), front_workers=1) as live:
        status, answer = call(live, "POST", "/ocr/prediction", body, token=None)
    with LiveApp(ocr_config()) as single:
        assert (status, answer) == call(single, "POST", "/ocr/prediction", body, token=None)
    assert status == 200


def test_a_drain_answers_what_the_fronts_accepted_and_stops_them():
    live = LiveApp(text_config(), front_workers=2)
    fronts = live.server.fronts
    answers: list[tuple[int, bytes]] = []
    held = threading.Thread(
        target=lambda: answers.append(call(live, "POST", "/ernie/prediction", paddle(HOLD), token=None))
    )
    held.start()
    end = time.monotonic() + 10
    while live.repository.listing()["pipelines"][0]["in_flight"] != 1:  # the held request reached the engine
        assert time.monotonic() < end, "the held request did not reach the engine"
        time.sleep(0.05)
    stopper = threading.Thread(target=live.close)
    stopper.start()
    time.sleep(0.3)
    live.op("cls").release()
    stopper.join(60)
    held.join(10)
    assert answers and answers[0][0] == 200, answers
    procs = list(fronts._procs)
    assert all(p.poll() == 0 for p in procs), [p.returncode for p in procs]


def test_the_config_key_and_its_bounds():
    assert parse_config(text_config()).http.front_workers == 0
    config = text_config()
    config["http"] = {"front_workers": 3}
    assert parse_config(config).http.front_workers == 3


def test_ray_has_its_own_front():
    from serving.commands import serve

    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    assert serve.main(parser.parse_args(["--ray", "--front-workers", "2"])) == 2


def test_fronts_that_cannot_start_stop_the_server_with_a_message(monkeypatch):
    from serving.batching.live_pipelines import PipelineRepository
    from serving.http.early_refusals import FrontGate
    from serving.http.front_processes.workers import FrontsFailed, FrontWorkers

    repository = PipelineRepository(repository_of(parse_config(text_config())), warmup=False)
    workers = FrontWorkers(repository, "127.0.0.1", 0, 2, FrontGate())
    # a front that dies before it links (say, its port cannot be bound)
    monkeypatch.setattr(workers, "_spawn", lambda index: subprocess.Popen([sys.executable, "-c", "pass"]))
    began = time.monotonic()
    with pytest.raises(FrontsFailed, match="did not all start"):
        workers.start(timeout=60)
    assert time.monotonic() - began < 30  # noticed when the front exited, not at the timeout
