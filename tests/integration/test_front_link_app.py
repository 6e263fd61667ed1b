"""The app a front process serves (``http.front_workers``) answers exactly as
the app in the engine's process: the same Flask app, once around the engine's
repository and once around a :class:`RemoteRepository` linked to it through a
:class:`FrontHub` (in this process: no child, the link is real)."""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import Client
from typing import Any

import pytest

from serving.batching.live_pipelines import PipelineRepository
from serving.batching.request import RequestState
from serving.config import parse_config
from serving.config.file_set import RepositoryConfig, repository_of
from serving.errors import ClientDisconnected, Overloaded, ShuttingDown
from serving.http.app import create_app
from serving.http.front_processes.hub import FrontHub
from serving.http.front_processes.link import FrontHello, Wire
from serving.http.front_processes.remote_pipelines import RemoteRepository
from tests.support.client_fakes import HOLD, text_config
from tests.support.http_fakes import echo_pipeline

ADMIN = "admin-token"


class Linked:
    """A repository, the hub in front of it, and one front's remote view of it."""

    def __init__(self, config: RepositoryConfig):
        self.config = config
        self.repository = PipelineRepository(config, loader=lambda sources: self.config, warmup=False)
        self.repository.start()
        key = secrets.token_bytes(16)
        address = f"\0batchline-test-{secrets.token_hex(6)}"
        self.hub = FrontHub(self.repository, address, key, count=1, auth_token=None, admin_token=ADMIN)
        self.hub.start()
        wire = Wire(Client(address, family="AF_UNIX", authkey=key))
        wire.send((0,))
        (hello,) = wire.recv()
        assert isinstance(hello, FrontHello) and hello.admin_token == ADMIN
        self.remote = RemoteRepository(wire, hello.snapshot)
        self.lost = threading.Event()
        threading.Thread(target=self.remote.serve, args=(self.lost.set,), daemon=True).start()

    def close(self) -> None:
        self.hub.close()
        self.repository.shutdown(timeout=5)


@pytest.fixture
def linked() -> Iterator[Linked]:
    link = Linked(repository_of(echo_pipeline().config))
    yield link
    link.close()


@pytest.fixture
def holding() -> Iterator[Linked]:
    """A text pipeline whose op holds a batch with the text HOLD until released."""
    link = Linked(repository_of(parse_config(text_config())))
    yield link
    link.repository.pipeline("ernie").stages["cls"].op.release()
    link.close()


def engine_side(link: Linked) -> list[RequestState]:
    """The engine's handles of what the front has in flight, once they are there."""
    end = time.monotonic() + 5
    while True:
        handles = [h for front in list(link.hub._links) for hs in front._in_flight.values() for h in hs]
        if handles or time.monotonic() > end:
            return handles
        time.sleep(0.01)


def both_apps(link: Linked) -> tuple[Any, Any]:
    direct = create_app(link.repository, admin_token=ADMIN).test_client()
    front = create_app(link.remote, admin_token=ADMIN).test_client()
    return direct, front


REQUESTS = [
    ("post", "/echo/prediction", {"data": json.dumps({"key": ["text"], "value": ["hi"], "logid": 7})}),
    ("post", "/echo/prediction", {"data": json.dumps({"key": ["text", "text"], "value": ["a", "héllo"]})}),
    ("post", "/echo/prediction", {"data": json.dumps({"key": ["text"], "value": ["boom"], "logid": 9})}),
    ("post", "/echo/prediction", {"data": json.dumps({"key": ["text", "text"], "value": ["ok", "boom"]})}),
    ("post", "/echo/prediction", {"data": b"{not json"}),
    ("post", "/echo/prediction", {"data": json.dumps({"key": ["text"] * 9, "value": ["x"] * 9})}),
    ("post", "/echo/prediction", {"data": b"x" * 5000}),
    ("post", "/nope/prediction", {"data": json.dumps({"key": ["text"], "value": ["hi"]})}),
    ("post", "/echo/v2/prediction", {"data": json.dumps({"key": ["text"], "value": ["hi"]})}),
    ("post", "/echo/predict", {"json": {"inputs": [{"text": "abc"}, {"text": "de"}]}}),
    ("post", "/echo/v1/predict", {"json": {"inputs": [{"text": "abc"}]}}),
    ("post", "/echo/predict", {"json": {"inputs": [{"image": "aGk="}]}}),
    ("get", "/pipelines", {}),
    ("get", "/echo/config", {}),
    ("get", "/echo/v1/config", {}),
    ("get", "/health/ready", {}),
    ("get", "/health/live", {}),
    ("get", "/v2/health/ready", {}),
    ("post", "/admin/reload", {}),
    ("get", "/nowhere", {}),
]


@pytest.mark.parametrize(("method", "path", "kwargs"), REQUESTS, ids=[f"{m} {p}" for m, p, _ in REQUESTS])
def test_a_front_answers_byte_for_byte_as_the_engine_process(linked, method, path, kwargs):
    direct, front = both_apps(linked)
    want = getattr(direct, method)(path, **kwargs)
    got = getattr(front, method)(path, **kwargs)
    assert (got.status_code, got.data) == (want.status_code, want.data)
    assert {k: v for k, v in got.headers if k != "Date"} == {k: v for k, v in want.headers if k != "Date"}


def test_timing_comes_back_from_the_engine(linked):
    _, front = both_apps(linked)
    r = front.post("/echo/predict", json={"inputs": [{"text": "abc"}], "timing": True})
    assert r.status_code == 200
    (timing,) = r.get_json()["timing"]
    assert timing["ops"]["echo"]["batch_sizes"] == [1] and timing["total_ms"] > 0


def test_metrics_are_the_engines(linked):
    _, front = both_apps(linked)
    front.post("/echo/prediction", data=json.dumps({"key": ["text"], "value": ["hi"]}))
    text = front.get("/metrics").get_data(as_text=True)
    assert text == linked.repository.metrics.render().decode()
    assert "batchline_requests_total{" in text


def test_a_refusal_of_several_values_is_raised_by_submit_as_in_the_engine(linked, monkeypatch):
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise Overloaded("full up", retry_after=2.0)

    monkeypatch.setattr(linked.repository, "submit", refuse)
    with pytest.raises(Overloaded, match="full up") as caught:
        linked.remote.submit("echo", ["a", "b"])
    assert caught.value.retry_after == 2.0
    (one,) = linked.remote.submit("echo", ["a"])
    with pytest.raises(Overloaded, match="full up"):
        one.result(timeout=5)


def test_a_value_the_front_gives_up_on_stops_in_the_engine(holding):
    (handle,) = holding.remote.submit("ernie", [HOLD], timeout_ms=60000)
    (held,) = engine_side(holding)
    assert not held.done
    handle.fail(ClientDisconnected("client gone"))
    assert held.wait(5)
    assert isinstance(held.error, ClientDisconnected)


def test_a_reload_reaches_the_front_before_its_answer(linked):
    bigger = echo_pipeline(max_queue_size=7).config
    linked.config = repository_of(bigger)
    _, front = both_apps(linked)
    seen = []
    linked.remote.on_reload(lambda: seen.append(linked.remote.config.pipelines[0].dag.max_queue_size))
    r = front.post("/admin/reload", headers={"Authorization": f"Bearer {ADMIN}"})
    assert r.status_code == 200, r.data
    assert seen[-1] == 7 and linked.remote.generation.number == 2


def test_the_engine_gone_fails_what_is_in_flight_and_tells_the_front(holding):
    (handle,) = holding.remote.submit("ernie", [HOLD], timeout_ms=60000)
    (held,) = engine_side(holding)
    holding.hub.close()
    assert holding.lost.wait(5)
    assert handle.wait(5)
    assert handle.error is not None and handle.error.status == 503
    _, front = both_apps(holding)
    r = front.post("/ernie/prediction", data=json.dumps({"key": ["text"], "value": ["hi"]}))
    assert r.status_code == 503
    assert held.wait(5) and isinstance(held.error, ClientDisconnected)  # nothing more is computed for it


def test_a_front_gone_fails_what_it_had_in_flight_in_the_engine(holding):
    holding.remote.submit("ernie", [HOLD], timeout_ms=60000)
    (held,) = engine_side(holding)
    holding.remote._wire.close()  # the front process died
    assert held.wait(5)
    assert isinstance(held.error, ClientDisconnected)


def test_a_bug_in_the_engine_fails_the_request_with_500_and_the_link_goes_on(linked, monkeypatch):
    real_submit = linked.repository.submit

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(linked.repository, "submit", broken)
    (handle,) = linked.remote.submit("echo", ["a"])
    assert handle.wait(5) and handle.error is not None and handle.error.status == 500
    monkeypatch.setattr(linked.repository, "submit", real_submit)
    (handle,) = linked.remote.submit("echo", ["b"])
    assert handle.result(timeout=5) == {"text": "b", "double_len": 2}


def test_a_submission_on_a_closed_link_is_refused_and_forgotten(linked, monkeypatch):
    def closed(message: Any) -> None:
        raise OSError("the link is closed")

    monkeypatch.setattr(linked.remote._wire, "send", closed)  # closed before its reader noticed
    for values in (["a"], ["a", "b"]):
        with pytest.raises(ShuttingDown):
            linked.remote.submit("echo", values)
    assert linked.remote._requests == {} and linked.remote._waiting == {}


def test_submissions_on_an_event_loop_leave_together_after_the_loop_pass(linked, monkeypatch):
    frames: list[int] = []
    flush = linked.remote._wire.flush

    def counted() -> None:
        frames.append(len(linked.remote._wire._out))
        flush()

    monkeypatch.setattr(linked.remote._wire, "flush", counted)

    async def three() -> list[RequestState]:
        handles = [h for text in ("a", "bb", "ccc") for h in linked.remote.submit("echo", [text])]
        assert frames == []  # nothing sent while the loop pass that submitted runs
        await asyncio.sleep(0)
        return handles

    handles = asyncio.run(three())
    assert frames == [3]  # one frame carried all three
    assert [h.result(timeout=5)["double_len"] for h in handles] == [2, 4, 6]


def test_a_submission_whose_link_ends_before_the_loop_sends_it_fails_with_the_link(linked, monkeypatch):
    def closed() -> None:
        raise OSError("the link is closed")

    monkeypatch.setattr(linked.remote._wire, "flush", closed)

    async def submit() -> RequestState:
        (handle,) = linked.remote.submit("echo", ["a"])
        await asyncio.sleep(0)  # the flush fails; the link's reader ends it
        return handle

    handle = asyncio.run(submit())
    linked.remote._lose_link()  # what serve() does once it reads the link's end
    with pytest.raises(ShuttingDown):
        handle.result(timeout=5)
