"""``batchline serve --ray``'s own steps, without a cluster: a stop that Ray never
confirms ends anyway, and replicas asking for more than the cluster has are named."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from serving.rayserve import run


def test_stop_gives_up_when_ray_never_answers(monkeypatch, caplog):
    release, returned = threading.Event(), threading.Event()
    calls = []

    def delete(name):
        calls.append(name)
        release.wait(30)  # a cluster whose GCS is gone: never returns
        returned.set()

    monkeypatch.setattr(run.serve, "delete", delete)
    began = time.monotonic()
    with caplog.at_level(logging.WARNING, logger=run.__name__):
        run._stop_application("ocr", shutdown_serve=False, timeout_s=0.3)
    release.set()
    assert returned.wait(10)  # the abandoned thread ends before the patch is undone
    assert calls == ["ocr"]
    assert time.monotonic() - began < 10
    assert "did not confirm" in caplog.text


def test_stop_deletes_then_shuts_serve_down(monkeypatch):
    calls = []
    monkeypatch.setattr(run.serve, "delete", lambda name: calls.append(("delete", name)))
    monkeypatch.setattr(run.serve, "shutdown", lambda: calls.append(("shutdown",)))
    run._stop_application("ocr", shutdown_serve=True, timeout_s=10)
    assert calls == [("delete", "ocr"), ("shutdown",)]
    calls.clear()
    run._stop_application("ocr", shutdown_serve=False, timeout_s=10)
    assert calls == [("delete", "ocr")]


def test_replicas_asking_for_more_than_the_cluster_has_are_named(monkeypatch, caplog):
    monkeypatch.setattr(run.ray, "cluster_resources", lambda: {"CPU": 2.0})
    deployments = [
        {"name": "det", "num_replicas": 1, "ray_actor_options": {"num_cpus": 2.0}},
        {"name": "rec", "autoscaling_config": {"min_replicas": 2}, "ray_actor_options": {"num_cpus": 1.0}},
        {"name": "gpu", "num_replicas": 1, "ray_actor_options": {"num_cpus": 0.0, "num_gpus": 1.0}},
    ]
    with caplog.at_level(logging.WARNING, logger=run.__name__):
        run._check_room(deployments)
    assert "ask for 4 CPU, the cluster has 2" in caplog.text
    assert "ask for 1 GPU, the cluster has 0" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=run.__name__):
        run._check_room(deployments[:1])
    assert caplog.text == ""


def test_proxies_that_die_while_starting_are_started_again(monkeypatch, caplog):
    from ray.exceptions import ActorDiedError

    outcomes = [ActorDiedError(), None]

    def start(**kwargs):
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    monkeypatch.setattr(run.serve, "start", start)
    with caplog.at_level(logging.WARNING, logger=run.__name__):
        run._start_proxies({"http_options": {}, "proxy_location": "EveryNode"})
    assert outcomes == [] and "trying again" in caplog.text
    monkeypatch.setattr(run.serve, "start", lambda **kwargs: (_ for _ in ()).throw(ActorDiedError()))
    with pytest.raises(ActorDiedError):  # the last failure is raised
        run._start_proxies({"http_options": {}, "proxy_location": "EveryNode"}, attempts=2)


def test_ray_client_connections_are_tried_again(monkeypatch, caplog):
    outcomes = [ConnectionAbortedError("Initialization failure from server"), None]
    addresses = []

    def init(address=None, **kwargs):
        addresses.append(address)
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    monkeypatch.setattr(run.ray, "init", init)
    monkeypatch.setattr(run.time, "sleep", lambda s: None)
    with caplog.at_level(logging.WARNING, logger=run.__name__):
        run._connect("ray://head:10001")
    assert addresses == ["ray://head:10001"] * 2 and "trying again" in caplog.text
    outcomes[:] = [ConnectionError("refused")]
    with pytest.raises(ConnectionError):  # a plain address is not Ray Client: no second try
        run._connect("10.0.0.1:6379")
