"""The Ray ingress's body budget (:mod:`serving.rayserve.ingress_gate`), without Ray: each
replica holds request bodies against one budget sized as one process's
(``http.max_buffered_mb``, default 4 x the largest ``max_body_size``); a body takes its
``Content-Length`` before any of it is read (a body without a length, each chunk before
it is kept), one that does not fit gets 503 with ``Retry-After`` unread, and the claim
goes back once the app is done with the body, whatever the outcome. A body the gate
refuses from its headers never takes any of it.

The ingress is the real class over fake op deployments (:mod:`tests.support.ray_ingress`);
every wait has a generous limit that only guards against a hang.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.requests import ClientDisconnect

from serving.errors import PayloadTooLarge, ServingError
from serving.http.early_refusals import FrontGate
from serving.rayserve import wsgi_bridge
from serving.service.body_budget import MIB, BodyBudget, Claim, buffered_bytes
from tests.support.ray_fakes import HANG_GUARD_S, RAY_FAKES, document, gate, op_conf, split_add
from tests.support.ray_ingress import Body, RayApp, RayApps, call, isolate, request

TOKEN = "t0ken"
AUTH_HEADER = (b"authorization", f"Bearer {TOKEN}".encode())
LIMIT = 1000  # max_body_size of every pipeline below: the default budget holds 4 such bodies
BUDGET = buffered_bytes(None, LIMIT)


def docs(gate_name: str | None = None, **top: Any) -> list[Any]:
    """``p``: split -> add ("7 3" in); ``e``: echo of any text; with ``gate_name``, ``g``: an
    echo held at that gate (:func:`tests.support.ray_fakes.gate`)."""
    out = [
        document("p", split_add(max_body_size=LIMIT), auth_token=TOKEN, **top),
        document("e", {"echo": op_conf("EchoTextOp", max_body_size=LIMIT)}, auth_token=TOKEN, **top),
    ]
    if gate_name is not None:
        gated = op_conf("GateOp", params={"gate": gate_name}, module=RAY_FAKES, max_body_size=LIMIT)
        out.append(document("g", {"echo": gated}, auth_token=TOKEN, **top))
    return out


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)


@pytest.fixture
def ray_app() -> Iterator[Callable[..., RayApp]]:
    with RayApps() as make:
        yield make


def budget_of(app: RayApp) -> BodyBudget:
    return app.ingress._front.budget


def sized(nbytes: int) -> list[tuple[bytes, bytes]]:
    return [(b"content-length", b"%d" % nbytes), AUTH_HEADER]


CHUNKED = [(b"transfer-encoding", b"chunked"), AUTH_HEADER]


def hold(budget: BodyBudget, nbytes: int) -> Claim:
    """What other requests' bodies hold: ``nbytes`` of ``budget`` taken."""
    claim = budget.claim()
    assert claim.grow_to(nbytes)
    return claim


async def until(condition: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + HANG_GUARD_S
    while not condition():
        assert time.monotonic() < end, what
        await asyncio.sleep(0.01)


def error_of(answer: Any) -> dict[str, Any]:
    return json.loads(answer.body)


# ----------------------------------------------------------------------------- its size


def test_each_replica_holds_one_processs_budget_following_the_apps_limit(ray_app):
    assert budget_of(ray_app(docs())).capacity == BUDGET == 4 * LIMIT
    app = ray_app(docs(http={"max_buffered_mb": 1}))
    assert budget_of(app).capacity == buffered_bytes(1, LIMIT) == MIB
    defaulted = ray_app(docs())
    defaulted.ingress.app.body_limit = 2 * LIMIT  # the app's limit changed
    assert call(defaulted, "/p/predict", Body([b"7 3"]), sized(3)).status_code == 200
    assert budget_of(defaulted).capacity == buffered_bytes(None, 2 * LIMIT)


# ----------------------------------------------------------------------------- no room: 503, unread


def test_bodies_past_the_budget_get_503_unread_until_answers_give_it_back(ray_app):
    """Four bodies of the largest size held by requests in progress fill the budget: a fifth
    request gets 503 + Retry-After in the app's shape without a byte of its body pulled;
    once those four are answered their bytes are back and it is served."""
    held = gate("ingress-budget-full")
    app = ray_app(docs("ingress-budget-full"))
    budget = budget_of(app)

    async def scenario() -> None:
        waiting = [
            asyncio.ensure_future(app.ingress(request("/g/predict", Body([b"a" * LIMIT]), sized(LIMIT))))
            for _ in range(4)
        ]
        try:
            await until(lambda: budget.held == BUDGET, "four bodies never held the budget")
            for path in ("/p/predict", "/p/prediction"):
                body = Body(itertools.repeat(b"7", 3))
                answer = await app.ingress(request(path, body, sized(3)))
                assert answer.status_code == 503 and body.pulled == 0
                assert answer.headers["retry-after"] == "1" and answer.headers["connection"] == "close"
                message = f"request bodies held by the server are at http.max_buffered_mb ({BUDGET} bytes), retry later"
                if path.endswith("/prediction"):
                    assert error_of(answer)["err_no"] == 503 and error_of(answer)["err_msg"] == message
                else:
                    assert error_of(answer) == {"error": {"status": 503, "message": message}}
            assert budget.held == BUDGET  # a refused body took nothing
        finally:
            held.go.set()
        answers = await asyncio.gather(*waiting)
        assert [a.status_code for a in answers] == [200] * 4
        assert budget.held == 0
        answer = await app.ingress(request("/p/predict", Body([b"7 3"]), sized(3)))
        assert answer.status_code == 200

    asyncio.run(scenario())


def test_a_declared_length_takes_what_is_left_and_no_more(ray_app):
    app = ray_app(docs())
    budget = budget_of(app)
    others = hold(budget, BUDGET - 500)
    body = Body([b"a" * 501])
    assert call(app, "/e/predict", body, sized(501)).status_code == 503 and body.pulled == 0
    seen: list[int] = []
    fits = Body([b"a" * 500], on_pull=lambda: seen.append(budget.held))
    answer = call(app, "/e/predict", fits, sized(500))
    assert answer.status_code == 200 and json.loads(answer.body)["results"][0]["text"] == "a" * 500
    assert seen[0] == BUDGET  # its 500 bytes were taken before the first byte was pulled
    assert budget.held == BUDGET - 500 == others.nbytes


def test_a_chunked_body_is_counted_as_it_arrives(ray_app):
    """No length up front: each chunk is claimed before it is kept, not the body limit
    up front (which would let a few chunked uploads lock everyone else out)."""
    app = ray_app(docs())
    budget = budget_of(app)
    seen: list[int] = []
    body = Body([b"7", b" ", b"3"], on_pull=lambda: seen.append(budget.held))
    answer = call(app, "/p/predict", body, CHUNKED)
    assert answer.status_code == 200
    assert seen == [0, 1, 2, 3]  # before each pull: what was kept so far
    assert budget.held == 0


def test_a_chunked_body_that_outgrows_the_room_is_503_after_one_chunk_past_it(ray_app):
    app = ray_app(docs())
    budget = budget_of(app)
    hold(budget, BUDGET - 250)
    body = Body(itertools.repeat(b"a" * 100, 10))  # 1000 bytes: within the body limit, not the room
    answer = call(app, "/e/prediction", body, CHUNKED)
    assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
    assert error_of(answer)["err_no"] == 503
    assert body.bytes == 300  # two chunks kept, the third refused: nothing more pulled
    assert budget.held == BUDGET - 250


def test_past_the_body_limit_is_413_before_it_is_503(ray_app):
    """A body refused anyway takes nothing: over the limit is 413 even with no room left."""
    app = ray_app(docs())
    budget = budget_of(app)
    hold(budget, BUDGET)
    body = Body(itertools.repeat(b"a", 2 * LIMIT))
    assert call(app, "/e/predict", body, sized(LIMIT + 1)).status_code == 413 and body.pulled == 0


# ----------------------------------------------------------------------------- the claim goes back


def test_the_claim_goes_back_once_answered_well_or_not(ray_app):
    app = ray_app(docs())
    budget = budget_of(app)
    for text, status in ((b"7 3", 200), (b"not numbers", 400)):
        seen: list[int] = []
        answer = call(app, "/p/predict", Body([text], on_pull=lambda s=seen: s.append(budget.held)), sized(len(text)))
        assert answer.status_code == status and seen[0] == len(text)
        assert budget.held == 0
    past = Body(itertools.repeat(b"7", 2 * LIMIT))  # chunked, refused part way (413)
    assert call(app, "/p/predict", past, CHUNKED).status_code == 413 and past.bytes == LIMIT + 1
    assert budget.held == 0


def test_the_claim_goes_back_when_the_client_leaves_mid_body(ray_app):
    app = ray_app(docs())
    budget = budget_of(app)
    seen: list[int] = []
    gone = Body([b"7 "], on_pull=lambda: seen.append(budget.held), disconnect=True)  # 2 of 3 bytes, then gone
    with pytest.raises(ClientDisconnect):
        call(app, "/p/predict", gone, sized(3))
    assert seen and min(seen) == 3
    assert budget.held == 0


@pytest.mark.parametrize("where", ["environ", "app"])
def test_the_claim_goes_back_when_the_bridge_or_the_app_fails(ray_app, monkeypatch, where):
    """A failure before the app runs (building its environ) or around it (outside its error
    handlers, which answer 500 themselves) still gives the body's bytes back."""
    app = ray_app(docs())
    budget = budget_of(app)
    during: list[int] = []

    def fail(*args: Any) -> Any:
        during.append(budget.held)
        raise RuntimeError("injected")

    monkeypatch.setattr(wsgi_bridge, "wsgi_environ" if where == "environ" else "run_app", fail)
    with pytest.raises(RuntimeError, match="injected"):
        call(app, "/p/predict", Body([b"7 3"]), sized(3))
    assert during == [3]
    assert budget.held == 0


def test_an_abandoned_requests_claim_goes_back_once_the_app_lets_go_of_its_body(ray_app):
    """Ray cancels the call when the client goes away; the app's thread still holds the
    body until it fails the request (at once), and the claim is held until then, not
    dropped at the cancellation (bodies of abandoned requests would escape the budget)."""
    held = gate("ingress-budget-abandon")
    app = ray_app(docs("ingress-budget-abandon", dag={"request_timeout_ms": 600_000, "max_queue_size": 32}))
    budget = budget_of(app)

    async def abandon() -> None:
        waiting = asyncio.ensure_future(app.ingress(request("/g/predict", Body([b"abc"]), sized(3))))
        assert await asyncio.to_thread(held.entered.wait, HANG_GUARD_S), "the op never got the request"
        assert budget.held == 3
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await until(lambda: budget.held == 0, "the abandoned request's claim never came back")

    try:
        asyncio.run(abandon())
        assert not held.go.is_set()  # given back while the op still holds the item: the app let go
    finally:
        held.go.set()


def test_a_cancelled_calls_claim_is_held_while_its_thread_still_holds_the_body(ray_app, monkeypatch):
    """An app that takes its time to give up: the claim stays until its thread returns."""
    app = ray_app(docs())
    budget = budget_of(app)
    entered, leave = threading.Event(), threading.Event()
    run_app = wsgi_bridge.run_app

    def slow(*args: Any) -> Any:
        entered.set()
        assert leave.wait(HANG_GUARD_S)
        return run_app(*args)

    monkeypatch.setattr(wsgi_bridge, "run_app", slow)

    async def abandon() -> None:
        waiting = asyncio.ensure_future(app.ingress(request("/p/predict", Body([b"7 3"]), sized(3))))
        assert await asyncio.to_thread(entered.wait, HANG_GUARD_S)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert budget.held == 3  # cancelled, but its thread still has the body
        leave.set()
        await until(lambda: budget.held == 0, "the claim never came back after the thread returned")

    try:
        asyncio.run(abandon())
    finally:
        leave.set()


# ----------------------------------------------------------------------------- the gate comes first


class CountingBudget(BodyBudget):
    """A body budget that counts the claims taken on it."""

    def __init__(self, capacity: int):
        super().__init__(capacity)
        self.claims = 0

    def claim(self) -> Claim:
        self.claims += 1
        return super().claim()


def counting(app: RayApp) -> CountingBudget:
    front = app.ingress._front
    front.budget = CountingBudget(front.budget.capacity)
    return front.budget


#: paths that take no body (FrontGate's rule, serving/http/access.py): a listing, the
#: probes, the metrics, the page, the admin route (no admin token set here)
NO_BODY_PATHS = ["/pipelines", "/health/live", "/v2/health/ready", "/metrics", "/", "/admin/reload"]


@pytest.mark.parametrize("headers", [sized(900), CHUNKED], ids=["length", "chunked"])
@pytest.mark.parametrize("path", NO_BODY_PATHS)
def test_a_body_to_a_path_that_takes_none_is_refused_from_its_headers_and_takes_no_budget(ray_app, path, headers):
    """The ingress applies FrontGate.refusal, the rule every front applies, before the limit
    and the budget: 413 as the gate words it, no byte pulled, no claim taken."""
    app = ray_app(docs())
    budget = counting(app)
    body = Body(itertools.repeat(b"a", 50 * LIMIT))
    answer = call(app, path, body, headers)
    refused = app.ingress._front.gate.refusal(path, f"Bearer {TOKEN}", True)
    assert refused is not None and refused.status == 413
    assert answer.status_code == 413 and body.pulled == 0
    assert refused.message in answer.body.decode()
    assert budget.claims == 0 and budget.held == 0


class EveryPathGate(FrontGate):
    """A gate with a rule of its own: every body refused (to show the ingress asks the gate)."""

    def refusal(self, path: str, authorization: str, has_body: bool) -> ServingError | None:
        return super().refusal(path, authorization, has_body) or (
            PayloadTooLarge("no bodies today") if has_body else None
        )


def test_whatever_the_gate_refuses_takes_no_budget(ray_app):
    app = ray_app(docs())
    app.ingress._front.gate = EveryPathGate(TOKEN)
    budget = counting(app)
    body = Body(itertools.repeat(b"7", 3))
    answer = call(app, "/p/predict", body, sized(3))
    assert answer.status_code == 413 and "no bodies today" in answer.body.decode()
    assert body.pulled == 0 and budget.claims == 0


def test_a_body_without_the_token_takes_no_budget(ray_app):
    app = ray_app(docs())
    budget = counting(app)
    for path in ("/p/predict", "/metrics"):  # the token first: a caller without it learns nothing of the route
        body = Body(itertools.repeat(b"a", 50 * LIMIT))
        answer = call(app, path, body, [(b"content-length", b"900")])
        assert answer.status_code == 401 and body.pulled == 0
    assert budget.claims == 0
