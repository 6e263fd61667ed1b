"""``batchline serve --ray``'s own steps, without a cluster: a stop that Ray never
confirms ends anyway, replicas asking for more than the cluster has are named,
the deploy is followed (and reported) without blocking the command, and
SIGTERM or SIGINT stops it while replicas still wait for room."""

from __future__ import annotations

import functools
import logging
import os
import signal
import threading
import time
from types import SimpleNamespace

import pytest

from serving.rayserve import run
from tests.support.ray_fakes import document, split_add


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


def app_status(state: str, message: str = "", **deployments: tuple[str, str]):
    """A ``serve.status()`` answer for application ``ocr``: deployment -> (status, message)."""
    infos = {name: SimpleNamespace(status=s, message=m) for name, (s, m) in deployments.items()}
    app = SimpleNamespace(status=state, message=message, deployments=infos)
    return SimpleNamespace(applications={"ocr": app})


def test_watch_follows_the_application_until_it_runs(caplog):
    answers = iter(
        [
            app_status("DEPLOYING", **{"ocr-rec": ("UPDATING", "Resources required for each replica: CPU 2")}),
            app_status("DEPLOYING", **{"ocr-rec": ("UPDATING", "Resources required for each replica: CPU 2")}),
            app_status("RUNNING", **{"ocr-rec": ("HEALTHY", "")}),
        ]
    )
    with caplog.at_level(logging.INFO, logger=run.__name__):
        assert run.watch("ocr", threading.Event(), status=lambda: next(answers), interval_s=0.01, report_every_s=0)
    assert "still deploying" in caplog.text and "ocr-rec UPDATING (Resources required" in caplog.text
    assert "application ocr is running" in caplog.text


def test_watch_reports_a_failed_deploy_and_ends_on_stop(caplog):
    failed = app_status("DEPLOY_FAILED", "replica constructor raised", ingress=("DEPLOY_FAILED", "boom"))
    with caplog.at_level(logging.ERROR, logger=run.__name__):
        assert run.watch("ocr", threading.Event(), status=lambda: failed, interval_s=0.01) is False
    assert "failed to deploy: replica constructor raised" in caplog.text
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    began = time.monotonic()
    assert run.watch("ocr", stop, status=lambda: app_status("DEPLOYING"), interval_s=0.01) is None
    assert time.monotonic() - began < 5


@pytest.fixture
def restored_signals():

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_command_while_replicas_wait_for_room(monkeypatch, restored_signals, signame):
    """Deploying never ends (a replica Ray has no room for): SIGTERM or SIGINT still stops the
    command at once, deleting the application and stopping the cluster it started."""

    calls = []
    monkeypatch.setattr(run, "local_cpus", lambda: 64)
    monkeypatch.setattr(run, "_connect", lambda address, **kw: calls.append(("connect", kw)))
    monkeypatch.setattr(run, "deploy", lambda *a, **kw: calls.append(("deploy",)))
    waiting = app_status("DEPLOYING", **{"p-split": ("UPDATING", "Resources required for each replica")})
    monkeypatch.setattr(run, "watch", functools.partial(run.watch, status=lambda: waiting))  # never room
    monkeypatch.setattr(run, "_stop_application", lambda name, **kw: calls.append(("stop", name, kw)))
    monkeypatch.setattr(run, "_disconnect", lambda started_here: calls.append(("disconnect", started_here)))
    threading.Timer(0.5, lambda: os.kill(os.getpid(), getattr(signal, signame))).start()
    began = time.monotonic()
    assert run.serve_on_ray([document("p", split_add())], address=None) == 0
    assert time.monotonic() - began < 10
    assert [c[0] for c in calls] == ["connect", "deploy", "stop", "disconnect"]
    assert calls[2][2]["shutdown_serve"] is True and calls[3] == ("disconnect", True)


def test_ray_address_from_the_environment_is_a_cluster_to_join_not_to_stop(monkeypatch, restored_signals):
    """``RAY_ADDRESS`` (as Ray's tools read it) names a cluster this command did not start: its
    CPUs are not fitted and, on stop, Serve and the cluster stay up. Without it the command asks
    Ray for a new local cluster ("local"), never one that `ray start` left on the machine."""
    calls = []
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.5:6379")
    monkeypatch.setattr(run, "local_cpus", lambda: (_ for _ in ()).throw(AssertionError("fitted")))
    monkeypatch.setattr(run.ray, "init", lambda **kw: calls.append(("init", kw["address"], kw["num_cpus"])))
    monkeypatch.setattr(run, "deploy", lambda *a, **kw: (_ for _ in ()).throw(RuntimeError("no cluster")))
    monkeypatch.setattr(run, "_stop_application", lambda name, **kw: calls.append(("stop", kw["shutdown_serve"])))
    monkeypatch.setattr(run, "_disconnect", lambda started_here: calls.append(("disconnect", started_here)))
    assert run.serve_on_ray([document("p", split_add())], address=None) == 1  # the deploy failed
    assert calls == [("init", "10.0.0.5:6379", None), ("stop", False), ("disconnect", False)]
    calls.clear()
    monkeypatch.delenv("RAY_ADDRESS")
    monkeypatch.setattr(run, "local_cpus", lambda: 8)
    assert run.serve_on_ray([document("p", split_add())], address=None) == 1
    assert calls == [("init", "local", 8), ("stop", True), ("disconnect", True)]
