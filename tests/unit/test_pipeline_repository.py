"""Several pipelines in one engine, with fake ops: versions and routing, A/B
weights, shadow copies, shared stages, reload (good, broken, under load)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from serving.batching.live_pipelines import PipelineRepository
from serving.config.file_set import load_repository
from serving.errors import InternalError, InvalidConfig, NotFound
from tests.support.engine_fakes import op_conf


def write(path: Path, name: str, ops: dict, **top) -> Path:
    body = {"name": name, "dag": {"request_timeout_ms": 20000, "max_queue_size": 512}, "op": ops}
    body.update(top)
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def split_add(factor_params=None, share=None, **svc):
    return {
        "split": op_conf("SplitOp", share=share, **svc),
        "add": op_conf("AddOp", ["split"], params=factor_params),
    }


@pytest.fixture
def repos():
    started: list[PipelineRepository] = []

    def start(*paths) -> PipelineRepository:
        repo = PipelineRepository(load_repository([str(p) for p in paths]))
        repo.start()
        started.append(repo)
        return repo

    yield start
    for repo in started:
        repo.shutdown(timeout=10)


def values_of(handle):
    return handle.result(timeout=20)["values"]


def test_two_pipelines_answer_on_their_own(tmp_path, repos):
    a = write(tmp_path / "a.yml", "alpha", split_add())
    b = write(tmp_path / "b.yml", "beta", {"echo": op_conf("EchoTextOp")})
    repo = repos(a, b)
    (h,) = repo.submit("alpha", [{"id": 3, "n": 2}])
    assert values_of(h) == [1200, 1204]
    (h,) = repo.submit("beta", ["hello"])
    assert h.result(timeout=20) == {"text": "hello", "double_len": 10}
    listing = repo.listing()
    assert listing["generation"] == 1 and listing["ready"]
    assert [(p["name"], p["version"], p["state"]) for p in listing["pipelines"]] == [
        ("alpha", 1, "serving"),
        ("beta", 1, "serving"),
    ]
    with pytest.raises(NotFound, match="gamma"):
        repo.submit("gamma", ["x"])
    with pytest.raises(NotFound, match="no version 2"):
        repo.submit("alpha", [{"id": 1, "n": 1}], version=2)


def test_highest_version_is_the_default_and_routing_default_overrides(tmp_path, repos):
    v1 = write(tmp_path / "v1.yml", "ocr", split_add(), version=1)
    v2 = write(tmp_path / "v2.yml", "ocr", split_add(), version=2)
    repo = repos(v1, v2)
    (h,) = repo.submit("ocr", [{"id": 1, "n": 1}])
    assert h.owner.version == 2
    (h,) = repo.submit("ocr", [{"id": 1, "n": 1}], version=1)
    assert h.owner.version == 1

    v1 = write(tmp_path / "v1.yml", "ocr", split_add(), version=1, routing={"default": 1})
    repo = repos(v1, v2)
    (h,) = repo.submit("ocr", [{"id": 1, "n": 1}])
    assert h.owner.version == 1


def test_weights_split_traffic_and_a_key_sticks_to_its_version(tmp_path, repos):
    v1 = write(tmp_path / "v1.yml", "ocr", split_add(), version=1, routing={"weights": {1: 80, 2: 20}})
    v2 = write(tmp_path / "v2.yml", "ocr", split_add(), version=2)
    repo = repos(v1, v2)
    seen = Counter()
    for i in range(1000):
        (h,) = repo.submit("ocr", [{"id": i, "n": 0}])
        h.result(timeout=20)
        seen[h.owner.version] += 1
    assert abs(seen[1] / 1000 - 0.8) <= 0.05 and abs(seen[2] / 1000 - 0.2) <= 0.05

    keyed = Counter()
    for i in range(1000):
        (h,) = repo.submit("ocr", [{"id": i, "n": 0}], key=f"user-{i}")
        keyed[h.owner.version] += 1
    assert abs(keyed[1] / 1000 - 0.8) <= 0.05
    for key in ("alice", "bob", "carol"):
        versions = {repo.submit("ocr", [{"id": 1, "n": 0}], key=key)[0].owner.version for _ in range(20)}
        assert len(versions) == 1
    # logid is the sticky key when no client key is given
    versions = {repo.submit("ocr", [{"id": 1, "n": 0}], logid=4242)[0].owner.version for _ in range(20)}
    assert len(versions) == 1


def metric(repo, name, **labels):
    from client.stats import MetricsSnapshot

    return MetricsSnapshot.from_text(repo.metrics.render().decode()).value(name, **labels)


def wait_for(condition, timeout=20.0):
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.01)


def test_shadow_gets_its_share_is_never_returned_and_agreement_is_exported(tmp_path, repos):
    routing = {"shadow": {"version": 2, "sample": 0.5, "max_in_flight": 100}}  # none dropped
    v1 = write(tmp_path / "v1.yml", "ocr", split_add(), version=1, routing={"default": 1, **routing})
    v2 = write(tmp_path / "v2.yml", "ocr", split_add(max_batch_size=1), version=2)
    repo = repos(v1, v2)
    for i in range(40):
        (h,) = repo.submit("ocr", [{"id": i, "n": 2}])
        assert h.owner.version == 1
        assert values_of(h) == [i * 400, i * 400 + 4]
    wait_for(lambda: metric(repo, "batchline_shadow_requests_total", pipeline="ocr") == 20)
    assert metric(repo, "batchline_shadow_requests_total", outcome="agree") == 20
    assert metric(repo, "batchline_shadow_agreement", pipeline="ocr", shadow_version="2") == 1.0
    assert metric(repo, "batchline_requests_total", pipeline="ocr", version="2") == 20
    assert metric(repo, "batchline_shadow_request_seconds_count", pipeline="ocr") == 20
    # explicit versions are never shadowed
    repo.submit("ocr", [{"id": 1, "n": 1}], version=1)[0].result(timeout=20)
    time.sleep(0.05)
    assert metric(repo, "batchline_requests_total", pipeline="ocr", version="2") == 20


def test_shadow_that_disagrees_is_counted(tmp_path, repos):
    v1 = write(
        tmp_path / "v1.yml",
        "ocr",
        split_add(),
        version=1,
        routing={"default": 1, "shadow": {"version": 2, "max_in_flight": 100}},
    )
    v2 = write(tmp_path / "v2.yml", "ocr", {"split": op_conf("SplitOp")}, version=2)  # no add: other values
    repo = repos(v1, v2)
    for i in range(1, 11):  # id 0 doubles to 0 in both versions
        repo.submit("ocr", [{"id": i, "n": 1}])[0].result(timeout=20)
    wait_for(lambda: metric(repo, "batchline_shadow_requests_total") == 10)
    assert metric(repo, "batchline_shadow_requests_total", outcome="disagree") == 10
    assert metric(repo, "batchline_shadow_agreement", pipeline="ocr") == 0.0


def test_shadow_copies_beyond_max_in_flight_are_dropped_not_queued(tmp_path, repos):
    slow = {"split": op_conf("SplitOp", params={"delay_ms": 200}, max_batch_size=1)}
    routing = {"default": 1, "shadow": {"version": 2, "max_in_flight": 1}}
    v1 = write(tmp_path / "v1.yml", "ocr", split_add(), version=1, routing=routing)
    v2 = write(tmp_path / "v2.yml", "ocr", slow, version=2)
    repo = repos(v1, v2)
    handles = [repo.submit("ocr", [{"id": i, "n": 1}])[0] for i in range(10)]
    for h in handles:
        h.result(timeout=20)  # the primary is never held up by its slow shadow
    wait_for(lambda: metric(repo, "batchline_shadow_requests_total") == 10)
    assert metric(repo, "batchline_shadow_requests_total", outcome="dropped") >= 8


def test_a_shared_op_is_one_stage_and_batches_items_of_both_pipelines(tmp_path, repos):
    shared = {"split": op_conf("SplitOp", share="splitter", max_queue_delay=200, batching_policy="fixed")}
    a = write(tmp_path / "a.yml", "alpha", {**shared, "add": op_conf("AddOp", ["split"])})
    b = write(tmp_path / "b.yml", "beta", dict(shared))
    repo = repos(a, b)
    pa, pb = repo.pipeline("alpha"), repo.pipeline("beta")
    assert pa.stages["split"] is pb.stages["split"]
    assert pa.stages["add"] is not None and pa.stages["split"].name == "splitter"
    with ThreadPoolExecutor(2) as pool:
        fa = pool.submit(lambda: values_of(repo.submit("alpha", [{"id": 1, "n": 4}])[0]))
        fb = pool.submit(lambda: values_of(repo.submit("beta", [{"id": 2, "n": 4}])[0]))
        assert fa.result() == [400, 404, 408, 412]
        assert fb.result() == [400, 402, 404, 406]
    # both requests' items went into one predictor call: 8 rows from two pipelines
    assert pa.stages["split"].op.runners[0].batch_sizes[-1] == 8
    assert metric(repo, "batchline_op_call_pipelines_sum", op="splitter") == 2
    assert metric(repo, "batchline_shared_op_requests_total", op="splitter", pipeline="alpha") == 1
    assert metric(repo, "batchline_shared_op_requests_total", op="splitter", pipeline="beta") == 1
    assert repo.listing()["shared_ops"] == {"splitter": ["alpha/v1", "beta/v1"]}


def test_reload_builds_new_and_changed_keeps_unchanged_and_drains_old(tmp_path, repos):
    a = write(tmp_path / "a.yml", "alpha", split_add())
    b = write(tmp_path / "b.yml", "beta", {"echo": op_conf("EchoTextOp")})
    repo = repos(tmp_path)
    old_alpha, old_beta = repo.pipeline("alpha"), repo.pipeline("beta")
    write(a, "alpha", split_add(max_batch_size=4))
    report = repo.reload()
    assert report.generation == 2
    assert report.changed == ["alpha/v1"] and report.unchanged == ["beta/v1"]
    assert repo.pipeline("beta") is old_beta
    new_alpha = repo.pipeline("alpha")
    assert new_alpha is not old_alpha and new_alpha.config.op["split"].local_service_conf.max_batch_size == 4
    wait_for(lambda: old_alpha.state == "stopped")
    assert values_of(repo.submit("alpha", [{"id": 2, "n": 1}])[0]) == [800]
    b.unlink()
    report = repo.reload()
    assert report.removed == ["beta/v1"]
    with pytest.raises(NotFound):
        repo.submit("beta", ["x"])
    wait_for(lambda: old_beta.state == "stopped")


def test_a_broken_config_on_reload_changes_nothing(tmp_path, repos):
    a = write(tmp_path / "a.yml", "alpha", split_add())
    repo = repos(a)
    before = repo.generation
    a.write_text("name: alpha\nop:\n  split: {class: nowhere:Nothing}\n")
    with pytest.raises(InvalidConfig, match="a.yml") as err:
        repo.reload()
    assert err.value.status == 422
    assert repo.generation is before
    assert values_of(repo.submit("alpha", [{"id": 1, "n": 1}])[0]) == [400]
    a.write_text("name: alpha\nop: [unclosed\n")
    with pytest.raises(InvalidConfig):
        repo.reload()
    assert repo.generation is before and repo.pipeline("alpha").ready


def test_a_model_that_fails_to_load_on_reload_changes_nothing(tmp_path, repos):
    write(tmp_path / "a.yml", "alpha", split_add())
    repo = repos(tmp_path)
    before = repo.generation
    write(tmp_path / "b.yml", "beta", {"load": op_conf("FailingLoadOp")})
    with pytest.raises(InternalError, match="reload failed"):
        repo.reload()
    assert repo.generation is before
    assert [p["name"] for p in repo.listing()["pipelines"]] == ["alpha"]


def test_reload_under_load_answers_every_request(tmp_path, repos):
    a = write(tmp_path / "a.yml", "alpha", split_add(), version=1)
    repo = repos(tmp_path)
    failures: list[BaseException] = []
    done = threading.Event()
    count = Counter()

    def client(cid):
        i = 0
        while not done.is_set():
            try:
                (h,) = repo.submit("alpha", [{"id": cid * 10000 + i, "n": 2}])
                rid = cid * 10000 + i
                assert values_of(h) == [rid * 400, rid * 400 + 4]
                count[h.owner.version] += 1
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                failures.append(exc)
            i += 1

    threads = [threading.Thread(target=client, args=(c,)) for c in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    write(a, "alpha", split_add(max_batch_size=4), version=1)
    write(tmp_path / "a2.yml", "alpha", split_add(), version=2)
    report = repo.reload()
    assert report.changed == ["alpha/v1"] and report.added == ["alpha/v2"]
    time.sleep(0.3)
    done.set()
    for t in threads:
        t.join()
    assert not failures, failures[:3]
    assert count[1] > 0 and count[2] > 0
    assert repo.pipeline("alpha", 1).config.op["split"].local_service_conf.max_batch_size == 4


def test_a_reload_cannot_move_the_server_and_changes_nothing(tmp_path, repos):
    a = write(tmp_path / "a.yml", "alpha", split_add())
    repo = repos(a)
    before = repo.generation
    write(a, "alpha", split_add(), http_port=8123)
    with pytest.raises(InvalidConfig, match="http_port changed"):
        repo.reload()
    assert repo.generation is before


def test_after_a_changed_pipeline_drains_its_successor_reports_ready(tmp_path, repos):
    a = write(tmp_path / "a.yml", "alpha", split_add())
    repo = repos(a)
    old = repo.pipeline("alpha")
    write(a, "alpha", split_add(max_batch_size=4))
    repo.reload()
    wait_for(lambda: old.state == "stopped")
    wait_for(lambda: metric(repo, "batchline_ready", pipeline="alpha", version="1") == 1)


def test_cpu_pinning_is_planned_across_pipelines(tmp_path, repos):
    pinned = {"use_openvino": True, "instance_mode": "process", "instance_num": 1, "thread_num": 1}
    write(tmp_path / "a.yml", "alpha", {"split": op_conf("SplitOp", **pinned)})
    b = write(tmp_path / "b.yml", "beta", {"split": op_conf("SplitOp", **pinned)})
    repo = repos(tmp_path)
    cpus = repo.cpus.usage()
    if len(cpus) >= 2:  # two pipelines, one pinned instance each: two different cores
        assert sorted(cpus.values(), reverse=True)[:2] == [1, 1] and max(cpus.values()) == 1
    b.unlink()
    repo.reload()
    wait_for(lambda: sum(repo.cpus.usage().values()) == 1)  # the removed pipeline gave its core back


def test_priorities_hold_across_pipelines_in_a_shared_stage(tmp_path, repos):
    slow = op_conf("SplitOp", share="slow", params={"delay_ms": 150}, max_batch_size=1, batching_policy="fixed")
    dag = {"request_timeout_ms": 20000, "max_queue_size": 64, "priority_levels": 2}
    a = write(tmp_path / "a.yml", "alpha", {"split": slow}, dag=dag)
    b = write(tmp_path / "b.yml", "beta", {"split": slow}, dag=dag)
    repo = repos(a, b)
    low = [repo.submit("alpha", [{"id": i, "n": 1}], priority=0)[0] for i in range(1, 4)]
    (high,) = repo.submit("beta", [{"id": 9, "n": 1}], priority=1)
    for h in [*low, high]:
        h.result(timeout=20)
    # the first low item was already running; the high one from the other pipeline goes next
    assert high.finished_at < low[1].finished_at < low[2].finished_at


def test_logid_zero_is_no_sticky_key(tmp_path, repos):
    """Paddle Serving clients send logid 0 when they set none: it must not pin them all to one version."""
    v1 = write(tmp_path / "v1.yml", "ocr", split_add(), version=1, routing={"weights": {1: 50, 2: 50}})
    v2 = write(tmp_path / "v2.yml", "ocr", split_add(), version=2)
    repo = repos(v1, v2)
    seen = Counter(repo.submit("ocr", [{"id": 1, "n": 0}], logid=0)[0].owner.version for _ in range(10))
    assert seen == {1: 5, 2: 5}


def test_a_version_that_becomes_the_shadow_is_rebuilt_in_the_idle_cpu_class(tmp_path, repos):
    v1 = write(tmp_path / "v1.yml", "ocr", split_add(), version=1, routing={"default": 1})
    write(tmp_path / "v2.yml", "ocr", split_add(), version=2)
    repo = repos(tmp_path)
    old_v2 = repo.pipeline("ocr", 2)
    assert not old_v2.idle_cpu
    write(v1, "ocr", split_add(), version=1, routing={"default": 1, "shadow": {"version": 2}})
    report = repo.reload()
    assert report.changed == ["ocr/v2"] and report.unchanged == ["ocr/v1"]
    assert repo.pipeline("ocr", 2).idle_cpu and repo.pipeline("ocr", 2) is not old_v2


def test_once_shutdown_shows_the_server_draining_a_new_request_is_refused(tmp_path, repos, monkeypatch):
    from serving.batching.pipeline import Pipeline
    from serving.errors import ShuttingDown

    repo = repos(write(tmp_path / "a.yml", "alpha", {"echo": op_conf("EchoTextOp")}))
    # the pipeline's drain thread held back, as the scheduler may hold it on a loaded machine
    go = threading.Event()
    drain = Pipeline.shutdown

    def late_drain(self, timeout=None):
        go.wait(20)
        return drain(self, timeout)

    monkeypatch.setattr(Pipeline, "shutdown", late_drain)
    closer = threading.Thread(target=repo.shutdown)
    closer.start()
    try:
        wait_for(lambda: not repo.ready)
        with pytest.raises(ShuttingDown):
            repo.submit("alpha", ["late"])  # admitted here, it would hold the drain until its answer
        assert repo.pipeline("alpha").state == "draining"
    finally:
        go.set()
        closer.join(20)
    assert repo.pipeline("alpha").state == "stopped"
