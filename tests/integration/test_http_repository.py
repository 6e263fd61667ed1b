"""Several pipelines in one server, over real HTTP, through the real client.

Every server is the real one: :class:`tests.support.live_app.LiveApp`
(``Server`` with waitress and the Flask app, in a thread) or, for SIGHUP,
:class:`tests.support.server_process.ServerProcess` (``batchline serve`` in a
child process). Its configs are yml files in a temporary directory read by
``load_repository``, as ``batchline serve`` reads them, running model-free
ops (tests/support/engine_fakes.py): a request text ``"id n"`` goes through
``split`` (n items, doubled) and, in most versions, ``add`` (doubled again),
so an answer tells which version made it (:func:`four_times` or
:func:`two_times`). Every request goes through :class:`PipelineClient`.

Timing: tests wait by polling with generous deadlines and assert counts and
statuses, never speed.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from client import cli as predict_cmd
from client import listing as pipelines_cmd
from client.pipeline_client import PROTOCOLS, PipelineClient, PipelineError, make_payload
from client.stats import MetricsSnapshot
from serving.config.file_set import load_repository
from tests.support.engine_fakes import FAKES, op_conf
from tests.support.live_app import LiveApp
from tests.support.server_process import ServerProcess, free_port

TOKEN = "reload-t0ken"  # the admin token: reload only
PREDICT_TOKEN = "predict-t0ken"
TOKEN_VARS = ("BATCHLINE_AUTH_TOKEN", "BATCHLINE_ADMIN_TOKEN")
DEADLINE_S = 60.0  # for anything awaited: generous, so a loaded machine is slow, not failing


@pytest.fixture(autouse=True)
def no_token_in_env(monkeypatch):
    """The server reads its token from the environment too; these tests set it in the configs only."""
    for var in TOKEN_VARS:
        monkeypatch.delenv(var, raising=False)


# ----------------------------------------------------------------------------- configs


def split_add(share=None, **svc) -> dict[str, Any]:
    """Answers :func:`four_times`."""
    return {"split": op_conf("TextSplitOp", share=share, **svc), "add": op_conf("AddOp", ["split"])}


def split_only(**svc) -> dict[str, Any]:
    """Answers :func:`two_times`."""
    return {"split": op_conf("TextSplitOp", **svc)}


def echo() -> dict[str, Any]:
    return {"echo": op_conf("EchoTextOp")}


def write(path: Path, name: str, ops: dict[str, Any], **top: Any) -> Path:
    # a small queue per pipeline: the HTTP thread pool is sized by their sum
    body: dict[str, Any] = {"name": name, "dag": {"request_timeout_ms": 30000, "max_queue_size": 32}, "op": ops}
    body.update(top)
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def four_times(rid: int, n: int) -> dict[str, Any]:
    return {"id": rid, "values": [400 * rid + 4 * j for j in range(n)]}


def two_times(rid: int, n: int) -> dict[str, Any]:
    return {"id": rid, "values": [200 * rid + 2 * j for j in range(n)]}


def version_of(answer: dict[str, Any], rid: int, n: int, *, v1=four_times, v2=two_times) -> int:
    """Which version made ``answer`` (v1 and v2 compute differently)."""
    if answer == v1(rid, n):
        return 1
    if answer == v2(rid, n):
        return 2
    raise AssertionError(f"answer {answer} for id {rid} is neither version's")


def wait_for(condition, what: str, timeout: float = DEADLINE_S) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.02)


def metrics(client: PipelineClient) -> MetricsSnapshot:
    return MetricsSnapshot.from_text(client.metrics_text())


# ----------------------------------------------------------------------------- servers


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    """One server, five pipeline names, eight versions:

    alpha    v1 split+add (80%, the default), v2 split only (20%); alpha v1's split shared as "splitter"
    beta     v1 echo (no version key, no routing)
    gamma    v1 split+add (default), v2 split+add at max_batch_size 1: shadow of half the routed requests
    delta    v1 split+add (default), v2 split only: shadow of every routed request, never agreeing
    epsilon  v1 split+add, v2 split only, 50/50 sticky per X-User; gamma v1's split shared as "splitter"
    """
    d = tmp_path_factory.mktemp("repo")
    write(d / "alpha1.yml", "alpha", split_add(share="splitter"), version=1, routing={"weights": {1: 80, 2: 20}})
    write(d / "alpha2.yml", "alpha", split_only(), version=2)
    write(d / "beta.yml", "beta", echo())
    shadow = {"version": 2, "sample": 0.5, "max_in_flight": 64}
    write(d / "gamma1.yml", "gamma", split_add(share="splitter"), version=1, routing={"default": 1, "shadow": shadow})
    write(d / "gamma2.yml", "gamma", split_add(max_batch_size=1), version=2)
    shadow = {"version": 2, "sample": 1.0, "max_in_flight": 64}
    write(d / "delta1.yml", "delta", split_add(), version=1, routing={"default": 1, "shadow": shadow})
    write(d / "delta2.yml", "delta", split_only(), version=2)
    routing = {"weights": {1: 50, 2: 50}, "key_header": "X-User"}
    write(d / "epsilon1.yml", "epsilon", split_add(), version=1, routing=routing)
    write(d / "epsilon2.yml", "epsilon", split_only(), version=2)
    with LiveApp(load_repository([str(d)])) as live:
        yield live


@pytest.fixture
def serve():
    """Start a server on config paths (files or directories) for one test; closed afterwards."""
    started: list[LiveApp] = []

    def start(*paths: Path, warmup: bool = True) -> LiveApp:
        live = LiveApp(load_repository([str(p) for p in paths]), warmup=warmup)
        started.append(live)
        return live

    yield start
    for live in started:
        live.close()


# ----------------------------------------------------------------------------- routes


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_pipeline_and_version_answers_at_its_routes(multi, protocol):
    with PipelineClient(multi.url) as c:
        assert c.predict("alpha", text="3 2", protocol=protocol, version=1) == [four_times(3, 2)]
        assert c.predict("alpha", text="3 2", protocol=protocol, version=2) == [two_times(3, 2)]
        (routed,) = c.predict("alpha", text="3 2", protocol=protocol)
        assert version_of(routed, 3, 2) in (1, 2)
        assert c.predict("beta", text="héllo", protocol=protocol) == [{"text": "héllo", "double_len": 10}]
        assert c.predict("beta", text="hi", protocol=protocol, version=1) == [{"text": "hi", "double_len": 4}]
        assert c.predict("gamma", texts=["1 1", "2 3"], protocol=protocol) == [four_times(1, 1), four_times(2, 3)]
        assert c.predict("epsilon", text="4 1", protocol=protocol, version=2) == [two_times(4, 1)]


def test_native_answers_name_the_version_that_answered(multi):
    payload = make_payload([("text", "3 1")], protocol="native")
    with PipelineClient(multi.url) as c:
        assert c.predict_raw("alpha", payload, protocol="native", version=1)["version"] == 1
        assert c.predict_raw("alpha", payload, protocol="native", version=2)["version"] == 2
        routed = c.predict_raw("alpha", payload, protocol="native")
        assert routed["version"] == version_of(routed["results"][0], 3, 1)
        assert c.predict_raw("beta", payload, protocol="native", version=1)["version"] == 1
        assert "version" not in c.predict_raw("beta", payload, protocol="native")  # one version, routed


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    "name, version, fragment",
    [
        ("nope", None, "unknown pipeline 'nope'"),
        ("nope", 1, "unknown pipeline 'nope'"),
        ("alpha", 3, "has no version 3 (versions: v1, v2)"),
        ("beta", 2, "has no version 2 (versions: v1)"),
    ],
)
def test_unknown_pipeline_or_version_is_404_in_the_protocols_error_body(multi, protocol, name, version, fragment):
    with PipelineClient(multi.url) as c, pytest.raises(PipelineError) as info:
        c.predict(name, text="1 1", protocol=protocol, version=version)
    assert info.value.status == 404 and fragment in info.value.message
    body = json.loads(info.value.body)
    if protocol == "paddle":  # Paddle Serving's shape, err_no the status
        assert body["err_no"] == 404 and fragment in body["err_msg"] and body["key"] == [] and body["value"] == []
    else:
        assert body["error"]["status"] == 404 and fragment in body["error"]["message"]


def test_an_unknown_path_is_404_naming_the_pipelines(multi):
    with PipelineClient(multi.url) as c, pytest.raises(PipelineError) as info:
        c.predict_raw("alpha/v1/extra", make_payload([("text", "1 1")]))
    assert info.value.status == 404
    assert "pipelines: alpha, beta, delta, epsilon, gamma" in info.value.message


def test_pipelines_lists_every_version_with_its_route_and_the_shared_ops(multi):
    with PipelineClient(multi.url) as c:
        listing = c.pipelines()
    assert listing["generation"] == 1 and listing["ready"] is True
    rows = {(p["name"], p["version"]): p for p in listing["pipelines"]}
    assert list(rows) == [
        ("alpha", 1),
        ("alpha", 2),
        ("beta", 1),
        ("delta", 1),
        ("delta", 2),
        ("epsilon", 1),
        ("epsilon", 2),
        ("gamma", 1),
        ("gamma", 2),
    ]
    assert all(p["state"] == "serving" for p in rows.values())
    roles = {key: (p["default"], p["weight"], p["shadow"]) for key, p in rows.items()}
    assert roles == {
        ("alpha", 1): (True, 80, False),  # no routing.default: the heaviest version
        ("alpha", 2): (False, 20, False),
        ("beta", 1): (True, 1, False),
        ("delta", 1): (True, 1, False),
        ("delta", 2): (False, 0, True),
        ("epsilon", 1): (False, 50, False),
        ("epsilon", 2): (True, 50, False),  # equal weights: the highest
        ("gamma", 1): (True, 1, False),
        ("gamma", 2): (False, 0, True),
    }
    assert [(op["op"], op["shared"]) for op in rows[("alpha", 1)]["ops"]] == [("split", "splitter"), ("add", None)]
    assert [(op["op"], op["shared"]) for op in rows[("alpha", 2)]["ops"]] == [("split", None)]
    assert rows[("gamma", 2)]["ops"][0]["max_batch_size"] == 1
    assert Path(rows[("beta", 1)]["source"]).name == "beta.yml"
    assert listing["routes"]["alpha"] == {
        "default": 1,
        "weights": {"1": 80, "2": 20},
        "key_header": "X-Route-Key",
        "shadow": None,
    }
    assert listing["routes"]["epsilon"]["key_header"] == "X-User"
    assert listing["routes"]["gamma"]["shadow"] == {"version": 2, "sample": 0.5, "max_in_flight": 64}
    assert listing["shared_ops"] == {"splitter": ["alpha/v1", "gamma/v1"]}


def test_config_of_the_default_and_of_each_version(multi):
    with PipelineClient(multi.url) as c:
        default = c.describe("alpha")
        assert (default["pipeline"], default["version"], default["generation"]) == ("alpha", 1, 1)
        assert default["input"] == "text" and [op["op"] for op in default["ops"]] == ["split", "add"]
        v2 = c.describe("alpha", 2)
        assert v2["version"] == 2 and [op["op"] for op in v2["ops"]] == ["split"]
        assert c.config("gamma", 2)[0]["max_batch_size"] == 1
        assert c.config("gamma")[0]["max_batch_size"] == 8
        for name, version in (("alpha", 3), ("nope", None), ("nope", 1)):
            with pytest.raises(PipelineError) as info:
                c.describe(name, version)
            assert info.value.status == 404


# ----------------------------------------------------------------------------- A/B routing


@pytest.mark.parametrize("keyed", [False, True], ids=["unkeyed", "keyed"])
def test_weights_80_20_split_1000_http_requests_within_5_percent(multi, keyed):
    """Unkeyed (the native protocol sends no logid): smooth weighted round robin.
    Keyed: each request its own route key, hashed to a version."""

    def send(t: int) -> Counter:
        seen: Counter = Counter()
        with PipelineClient(multi.url) as c:
            for i in range(250):
                rid = t * 1000 + i
                key = f"user-{rid}" if keyed else None
                (answer,) = c.predict("alpha", text=f"{rid} 1", protocol="native", route_key=key)
                seen[version_of(answer, rid, 1)] += 1
        return seen

    with ThreadPoolExecutor(4) as pool:
        seen = sum((f.result() for f in [pool.submit(send, t) for t in range(4)]), Counter())
    assert sum(seen.values()) == 1000
    assert abs(seen[1] / 1000 - 0.8) <= 0.05 and abs(seen[2] / 1000 - 0.2) <= 0.05, seen


def test_a_route_key_sticks_to_one_version(multi):
    by_key = {}
    with PipelineClient(multi.url) as c:
        for k in range(50):
            versions = {version_of(c.predict("alpha", text="5 1", route_key=f"k{k}")[0], 5, 1) for _ in range(4)}
            assert len(versions) == 1, f"key k{k} reached {versions}"
            by_key[k] = versions.pop()
        assert set(by_key.values()) == {1, 2}  # the keys spread over both versions
        # a route that names its own header reads the key there
        for k in range(10):
            answers = [c.predict("epsilon", text="6 1", route_key=f"k{k}", route_header="X-User")[0] for _ in range(4)]
            assert len({version_of(a, 6, 1) for a in answers}) == 1


def test_the_logid_is_the_sticky_key_when_no_route_key_is_sent(multi):
    with PipelineClient(multi.url) as c:
        seen = set()
        for logid in range(1, 41):  # logid 0 is Paddle clients' default: no key
            payload = make_payload([("text", "7 1")], logid=logid)
            versions = {version_of(json.loads(c.predict_raw("alpha", payload)["value"][0]), 7, 1) for _ in range(3)}
            assert len(versions) == 1, f"logid {logid} reached {versions}"
            seen |= versions
        assert seen == {1, 2}


# ----------------------------------------------------------------------------- shadow


def test_a_shadow_gets_its_share_agrees_and_shows_in_metrics(multi):
    """gamma v2 (max_batch_size 1) shadows half of gamma's routed requests; unkeyed requests are
    sampled exactly."""
    with PipelineClient(multi.url) as c:
        before = metrics(c)
        for i in range(1, 41):
            assert c.predict("gamma", text=f"{i} 2", protocol="native") == [four_times(i, 2)]

        def copies() -> float:
            return metrics(c).delta(before, "batchline_shadow_requests_total", pipeline="gamma")

        wait_for(lambda: copies() >= 20, "20 shadow copies compared")
        time.sleep(0.2)  # any copy beyond the share would have been counted by now
        after = metrics(c)
    assert copies() == 20
    assert after.delta(before, "batchline_shadow_requests_total", pipeline="gamma", outcome="agree") == 20
    assert after.value("batchline_shadow_agreement", pipeline="gamma", shadow_version="2") == 1.0
    assert after.delta(before, "batchline_shadow_request_seconds_count", pipeline="gamma") == 20
    assert after.delta(before, "batchline_requests_total", pipeline="gamma", version="2") == 20
    assert after.delta(before, "batchline_requests_total", pipeline="gamma", version="1") == 40


def test_a_shadow_answer_is_never_returned_and_disagreement_is_counted(multi):
    """delta v2 answers differently from v1 and gets a copy of every routed request."""
    with PipelineClient(multi.url) as c:
        before = metrics(c)
        for i in range(1, 11):
            for protocol in PROTOCOLS:
                assert c.predict("delta", text=f"{i} 2", protocol=protocol) == [four_times(i, 2)]
        copies = 10 * len(PROTOCOLS)
        wait_for(
            lambda: metrics(c).delta(before, "batchline_shadow_requests_total", pipeline="delta") >= copies,
            f"{copies} shadow copies compared",
        )
        after = metrics(c)
    assert after.delta(before, "batchline_shadow_requests_total", pipeline="delta", outcome="disagree") == copies
    assert after.value("batchline_shadow_agreement", pipeline="delta", shadow_version="2") == 0.0


# ----------------------------------------------------------------------------- the command line


def _predict(argv: list[str]) -> int:
    return predict_cmd.main(predict_cmd.build_parser().parse_args(argv))


def _pipelines(argv: list[str]) -> int:
    return pipelines_cmd.main(pipelines_cmd.build_parser().parse_args(argv))


def test_batchline_predict_version_and_route_key(multi, capsys):
    base = ["--url", multi.url, "--pipeline", "alpha", "--json", "--text", "3 2"]
    assert _predict([*base, "--version", "1"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[1]) == four_times(3, 2)
    assert _predict([*base, "--version", "2", "--protocol", "native"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[1]) == two_times(3, 2)
    answers = []
    for _ in range(4):
        assert _predict([*base, "--route-key", "user-42"]) == 0
        answers.append(json.loads(capsys.readouterr().out.splitlines()[1]))
    assert len({version_of(a, 3, 2) for a in answers}) == 1
    assert _predict([*base, "--version", "3"]) == 1
    err = capsys.readouterr().err
    assert "HTTP 404" in err and "no version 3" in err
    epsilon = ["--url", multi.url, "--pipeline", "epsilon", "--json", "--text", "3 2", "--route-key", "u7"]
    answers = []
    for _ in range(4):
        assert _predict([*epsilon, "--route-header", "X-User"]) == 0
        answers.append(json.loads(capsys.readouterr().out.splitlines()[1]))
    assert len({version_of(a, 3, 2) for a in answers}) == 1
    for bad in ("0", "-1", "two"):
        with pytest.raises(SystemExit):
            predict_cmd.build_parser().parse_args([*base, "--version", bad])
        assert "a version is an integer >= 1" in capsys.readouterr().err


def test_batchline_pipelines_lists_versions_routes_and_shared_ops(multi, capsys):
    assert _pipelines(["--url", multi.url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "generation 1, ready"
    assert lines[1].split() == ["pipeline", "state", "route", "ops", "source"]
    rows = {" ".join(line.split()[:2]): line for line in lines[2:11]}
    assert "80% of requests" in rows["alpha v1"] and "split (shared: splitter), add" in rows["alpha v1"]
    assert rows["alpha v1"].rstrip().endswith("alpha1.yml")
    assert "20% of requests" in rows["alpha v2"]
    assert "default" in rows["beta v1"] and "serving" in rows["beta v1"]
    assert "shadow: a copy of 50% of routed requests, answers not returned" in rows["gamma v2"]
    routes = lines[lines.index("routes:") + 1 : lines.index("shared ops:")]
    assert routes == [  # by name, as GET /pipelines lists them
        "  /alpha/prediction -> v1 80%, v2 20% (sticky per X-Route-Key header, else logid)",
        "  /beta/prediction -> v1",
        "  /delta/prediction -> v1; shadow v2 gets 100%, at most 64 in flight",
        "  /epsilon/prediction -> v1 50%, v2 50% (sticky per X-User header, else logid)",
        "  /gamma/prediction -> v1; shadow v2 gets 50%, at most 64 in flight",
    ]
    assert lines[lines.index("shared ops:") + 1 :] == ["  splitter: alpha/v1, gamma/v1"]

    assert _pipelines(["--url", multi.url, "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["generation"] == 1 and len(listing["pipelines"]) == 9

    assert _pipelines(["--url", f"http://127.0.0.1:{free_port()}", "--timeout", "2"]) == 1
    assert "status 0" in capsys.readouterr().err


# ----------------------------------------------------------------------------- reload over HTTP


def test_reload_over_http_is_refused_without_a_configured_token(multi):
    with PipelineClient(multi.url) as c, pytest.raises(PipelineError) as info:
        c.reload()
    assert info.value.status == 403 and "SIGHUP" in info.value.message
    with PipelineClient(multi.url) as c:
        assert c.pipelines()["generation"] == 1


def test_reload_needs_the_admin_token_not_the_prediction_token(tmp_path, serve):
    """Regression: one token (auth_token) served predictions and reload alike; now reload
    needs admin_token, refused (403, SIGHUP only) when none is set, whatever token is sent."""
    write(tmp_path / "alpha.yml", "alpha", split_add(), auth_token=PREDICT_TOKEN)
    live = serve(tmp_path)
    with PipelineClient(live.url, token=PREDICT_TOKEN) as c, pytest.raises(PipelineError) as info:
        c.reload()
    assert info.value.status == 403 and "admin_token" in info.value.message and PREDICT_TOKEN not in info.value.message


def test_reload_with_the_token_applies_new_changed_and_removed_configs(tmp_path, serve):
    alpha = write(tmp_path / "alpha.yml", "alpha", split_add(), admin_token=TOKEN, auth_token=PREDICT_TOKEN)
    beta = write(tmp_path / "beta.yml", "beta", echo())
    live = serve(tmp_path)
    write(alpha, "alpha", split_add(max_batch_size=4), admin_token=TOKEN, auth_token=PREDICT_TOKEN)
    write(tmp_path / "alpha2.yml", "alpha", split_only(), version=2)
    for token in (None, "wrong", PREDICT_TOKEN):  # the prediction token is no admin token
        with PipelineClient(live.url, token=token) as c, pytest.raises(PipelineError) as info:
            c.reload()
        assert info.value.status == 401
    with PipelineClient(live.url, token=TOKEN) as c, pytest.raises(PipelineError) as info:
        c.pipelines()  # nor the admin token a prediction token
    assert info.value.status == 401
    with PipelineClient(live.url, token=PREDICT_TOKEN) as c:
        assert c.pipelines()["generation"] == 1  # refused reloads changed nothing
        assert c.config("alpha")[0]["max_batch_size"] == 8
        report = c.reload(admin_token=TOKEN)
        assert report == {
            "status": "reloaded",
            "generation": 2,
            "added": ["alpha/v2"],
            "changed": ["alpha/v1"],
            "removed": [],
            "unchanged": ["beta/v1"],
        }
        assert c.pipelines()["generation"] == 2
        v1 = c.describe("alpha", 1)
        assert v1["generation"] == 2 and v1["ops"][0]["max_batch_size"] == 4
        assert c.describe("alpha")["version"] == 2  # the new highest version is the default
        assert c.predict("alpha", text="2 2") == [two_times(2, 2)]
        assert c.predict("alpha", text="2 2", version=1) == [four_times(2, 2)]
        assert c.predict("beta", text="ok") == [{"text": "ok", "double_len": 4}]

        beta.unlink()
        assert c.reload(admin_token=TOKEN)["removed"] == ["beta/v1"]
        with pytest.raises(PipelineError) as info:
            c.predict("beta", text="ok")
        assert info.value.status == 404
        listing = c.pipelines()
        assert listing["generation"] == 3 and [p["name"] for p in listing["pipelines"]] == ["alpha", "alpha"]
        after = metrics(c)
    assert after.value("batchline_generation") == 3
    assert after.value("batchline_reloads_total", outcome="ok") == 2


def test_a_broken_config_on_reload_is_refused_and_changes_nothing(tmp_path, serve):
    alpha = write(tmp_path / "alpha.yml", "alpha", split_add(), admin_token=TOKEN)
    good = alpha.read_text()
    live = serve(tmp_path)
    with PipelineClient(live.url, token=TOKEN) as c:
        before = c.pipelines()
        assert c.predict("alpha", text="3 1") == [four_times(3, 1)]
        broken = {
            "an unknown op class": good.replace(f"{FAKES}:TextSplitOp", "nowhere:Nothing"),
            "a yaml syntax error": "name: alpha\nop: [unclosed\n",
            "a port the server does not listen on": good + f"http_port: {free_port()}\n",
            "a second pipeline alpha v1": None,
        }
        for what, text in broken.items():
            if text is None:
                write(tmp_path / "again.yml", "alpha", split_only())
            else:
                alpha.write_text(text)
            with pytest.raises(PipelineError) as info:
                c.reload()
            assert info.value.status == 422, what
            assert "nothing changed" in info.value.message, what
            after = c.pipelines()
            assert after["generation"] == before["generation"] == 1, what
            assert [(p["name"], p["version"], p["state"]) for p in after["pipelines"]] == [("alpha", 1, "serving")]
            assert c.predict("alpha", text="3 1") == [four_times(3, 1)], what
            assert c.describe("alpha")["generation"] == 1
            alpha.write_text(good)
            (tmp_path / "again.yml").unlink(missing_ok=True)
        # a model that fails to load: 500, and nothing changed either
        write(tmp_path / "broken.yml", "broken", {"load": op_conf("FailingLoadOp")})
        with pytest.raises(PipelineError) as info:
            c.reload()
        assert info.value.status == 500 and "reload failed, nothing changed" in info.value.message
        assert [p["name"] for p in c.pipelines()["pipelines"]] == ["alpha"]
        assert c.pipelines()["generation"] == 1
        assert c.predict("alpha", text="3 1") == [four_times(3, 1)]
        counts = metrics(c)
    assert counts.value("batchline_reloads_total", outcome="invalid") == 4
    assert counts.value("batchline_reloads_total", outcome="failed") == 1
    assert counts.value("batchline_generation") == 1


def test_a_reload_while_one_runs_is_409_and_the_old_set_serves_meanwhile(tmp_path, serve):
    write(tmp_path / "alpha.yml", "alpha", split_add(), admin_token=TOKEN)
    live = serve(tmp_path)
    gate = tmp_path / "gate"
    gate.mkdir()
    # a new pipeline whose op's load() waits until the test lets it go
    write(tmp_path / "held.yml", "held", {"echo": op_conf("GatedLoadOp", params={"gate": str(gate)})})
    with ThreadPoolExecutor(1) as pool, PipelineClient(live.url, token=TOKEN) as c:

        def first_reload() -> dict:
            with PipelineClient(live.url, token=TOKEN, timeout=DEADLINE_S * 2) as own:
                return own.reload()

        first = pool.submit(first_reload)
        try:
            wait_for(lambda: (gate / "loading").exists() or first.done(), "the reload loading the new pipeline")
            assert not first.done(), first.result()
            with pytest.raises(PipelineError) as info:
                c.reload()
            assert info.value.status == 409 and "already running" in info.value.message
            # the old generation serves while the new one loads
            assert c.pipelines()["generation"] == 1
            assert c.predict("alpha", text="4 1") == [four_times(4, 1)]
        finally:
            (gate / "go").touch()
        assert first.result(timeout=DEADLINE_S)["added"] == ["held/v1"]
        assert c.pipelines()["generation"] == 2
        assert c.predict("held", text="hey") == [{"text": "hey", "double_len": 6}]


# ----------------------------------------------------------------------------- reload under load


def test_reload_under_load_answers_every_request(tmp_path, serve):
    """8 clients send without pause while a reload changes max_batch_size and adds a version,
    and a second one removes that version again: every request gets its answer."""
    alpha = write(tmp_path / "alpha.yml", "alpha", split_add(), version=1, admin_token=TOKEN)
    live = serve(tmp_path)
    done = threading.Event()
    failures: list[BaseException] = []
    answered = [0] * 8
    versions: Counter = Counter()
    lock = threading.Lock()

    def client(cid: int) -> None:
        with PipelineClient(live.url, token=TOKEN, timeout=DEADLINE_S) as c:
            i = 0
            while not done.is_set():
                rid = cid * 1000 + i % 1000
                try:
                    if cid % 2:  # the native answer names the version when there are several
                        body = c.predict_raw(
                            "alpha", make_payload([("text", f"{rid} 2")], protocol="native"), protocol="native"
                        )
                        assert body["results"] == [four_times(rid, 2)]
                        with lock:
                            versions[body.get("version", 1)] += 1
                    else:
                        assert c.predict("alpha", text=f"{rid} 2") == [four_times(rid, 2)]
                except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                    failures.append(exc)
                answered[cid] += 1
                i += 1

    def all_answered(more_than: list[int]) -> bool:
        return all(n > m for n, m in zip(answered, more_than))

    threads = [threading.Thread(target=client, args=(cid,), name=f"client-{cid}") for cid in range(8)]
    for t in threads:
        t.start()
    try:
        with PipelineClient(live.url, token=TOKEN, timeout=DEADLINE_S * 2) as admin:
            wait_for(lambda: all_answered([5] * 8), "every client answered before the reload")
            write(alpha, "alpha", split_add(max_batch_size=4), version=1, admin_token=TOKEN)
            alpha2 = write(tmp_path / "alpha2.yml", "alpha", split_add(), version=2)
            report = admin.reload()
            assert (report["changed"], report["added"], report["generation"]) == (["alpha/v1"], ["alpha/v2"], 2)
            wait_for(lambda: versions[2] >= 20, "version 2 answering routed requests")
            mark = list(answered)
            wait_for(lambda: all_answered([m + 5 for m in mark]), "every client answered after the reload")
            v1 = admin.describe("alpha", 1)
            assert v1["generation"] == 2 and v1["ops"][0]["max_batch_size"] == 4
            assert admin.describe("alpha")["version"] == 2

            alpha2.unlink()
            assert admin.reload()["removed"] == ["alpha/v2"]
            mark = list(answered)
            wait_for(lambda: all_answered([m + 5 for m in mark]), "every client answered after the second reload")
            assert admin.describe("alpha")["version"] == 1 and admin.pipelines()["generation"] == 3
    finally:
        done.set()
        for t in threads:
            t.join(DEADLINE_S)
    assert not failures, failures[:3]
    assert versions[1] > 0 and versions[2] >= 20


# ----------------------------------------------------------------------------- SIGHUP


def test_sighup_reloads_a_served_directory(tmp_path):
    conf = tmp_path / "conf"
    conf.mkdir()
    alpha = write(conf / "alpha.yml", "alpha", split_add())
    write(conf / "beta.yml", "beta", echo())
    with ServerProcess([str(conf)], ready_timeout=120) as server, PipelineClient(server.url) as c:
        assert c.pipelines()["generation"] == 1
        assert c.predict("alpha", text="2 1") == [four_times(2, 1)]
        write(alpha, "alpha", split_add(max_batch_size=3))
        write(conf / "gamma.yml", "gamma", split_only())
        server.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: c.pipelines()["generation"] == 2, f"generation 2 after SIGHUP; log:\n{server.log()}")
        assert c.config("alpha")[0]["max_batch_size"] == 3
        assert c.predict("gamma", text="2 1") == [two_times(2, 1)]
        assert c.predict("alpha", text="2 1") == [four_times(2, 1)]
        assert "SIGHUP reload done" in server.log()
        assert server.terminate() == 0


def test_sighup_while_the_server_starts_is_not_fatal_and_reloads_once_started(tmp_path):
    """Regression: the SIGHUP handler was installed only after every pipeline had loaded, so a
    SIGHUP during start-up (a config edited while models load) killed the server."""
    conf = tmp_path / "conf"
    conf.mkdir()
    gate = tmp_path / "gate"
    gate.mkdir()
    write(conf / "held.yml", "held", {"echo": op_conf("GatedLoadOp", params={"gate": str(gate)})})
    with ServerProcess([str(conf)], wait_ready=False) as server:
        try:
            wait_for(lambda: (gate / "loading").exists() or server.proc.poll() is not None, "the op loading")
            write(conf / "beta.yml", "beta", echo())
            server.proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)  # the default action would have ended the process by now
            assert server.proc.poll() is None, server.log()
        finally:
            (gate / "go").touch()
        server.wait_ready(120)
        with PipelineClient(server.url) as c:
            wait_for(lambda: c.pipelines()["generation"] == 2, f"the reload after start-up; log:\n{server.log()}")
            assert c.predict("beta", text="hi") == [{"text": "hi", "double_len": 4}]
        assert server.terminate() == 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_request_in_flight_when_a_reload_removes_its_pipeline_gets_its_answer(tmp_path, serve, protocol):
    """Regression: the native answer looked the route up again after the request ran; a reload
    that removed the pipeline meanwhile turned the answer into a 500."""
    write(tmp_path / "alpha.yml", "alpha", split_add(), admin_token=TOKEN)
    beta = write(tmp_path / "beta.yml", "beta", {"echo": op_conf("EchoTextOp", params={"delay_ms": 1500})})
    live = serve(tmp_path, warmup=False)  # warming runs the slow predictor many times
    with ThreadPoolExecutor(1) as pool, PipelineClient(live.url, token=TOKEN) as c:

        def slow() -> list:
            with PipelineClient(live.url, token=TOKEN) as own:
                return own.predict("beta", text="slow", protocol=protocol)

        answer = pool.submit(slow)
        in_flight = lambda: c.pipelines()["pipelines"][1]["in_flight"]  # noqa: E731
        wait_for(lambda: in_flight() == 1 or answer.done(), "the request admitted")
        beta.unlink()
        assert c.reload()["removed"] == ["beta/v1"]
        assert answer.result(timeout=DEADLINE_S) == [{"text": "slow", "double_len": 8}]
        with pytest.raises(PipelineError) as info:
            c.predict("beta", text="again", protocol=protocol)
        assert info.value.status == 404
