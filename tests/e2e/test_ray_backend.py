"""The OCR pipeline on a two-node Ray cluster (``batchline serve --ray``),
driven by the bundled client: the same lines as the single-process server,
the same HTTP API, rec replicas on both raylets, two ingress replicas whose
requests batch together, a second application deployed through Ray Client
(``ray://``), a rec replica killed under
load (every request answered 200, or 503/504 in time; Ray replaces it), and
a shutdown that leaves no Ray process behind.

The cluster is this machine twice: a head and one more node, 2 logical CPUs
each, so the two rec replicas (1.5 CPUs each) cannot share a node."""

from __future__ import annotations

import base64
import collections
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
import yaml
from prometheus_client.parser import text_string_to_metric_families

from client import PipelineClient
from tests.support.ray_cluster import LocalRayCluster
from tests.support.server_process import ROOT, ServerProcess

pytestmark = pytest.mark.slow

APP = "ocr"


def ray_ocr_config(path: str) -> str:
    """configs/ocr.yml with one instance per op and ray: blocks sized for the two 2-CPU nodes."""
    with open(os.path.join(ROOT, "configs", "ocr.yml"), encoding="utf-8") as f:
        data = yaml.safe_load(f)
    for op in data["op"].values():
        op["local_service_conf"]["instance_num"] = 1
    data["ray"] = {
        "ingress": {"num_replicas": 2, "ray_actor_options": {"num_cpus": 0.25}},
        "metrics_interval_s": 0.5,
    }
    data["op"]["det"]["ray"] = {"ray_actor_options": {"num_cpus": 0.5}}
    data["op"]["rec"]["ray"] = {"num_replicas": 2, "ray_actor_options": {"num_cpus": 1.5}}
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(data, f)
    return path


def png(img) -> bytes:
    from tests.support.synth import encode_image

    return encode_image(img, ".png")


@pytest.fixture(scope="module")
def config_path(tmp_path_factory):
    return ray_ocr_config(str(tmp_path_factory.mktemp("ray") / "ocr.yml"))


@pytest.fixture(scope="module")
def single_process_answers(config_path, docs):
    """The single-process server's lines for the sample pages, on the same config (stopped before Ray starts)."""
    with ServerProcess(config_path) as srv, PipelineClient(srv.url, timeout=120) as client:
        answers = [client.predict("ocr", image=png(d.image))[0] for d in docs]
        assert srv.terminate() == 0
    return answers


@pytest.fixture(scope="module")
def cluster(single_process_answers):
    ray = LocalRayCluster(cpus_per_node=(2, 2)).start()
    yield ray
    ray.stop()


@pytest.fixture(scope="module")
def server(cluster, config_path):
    srv = ServerProcess(
        config_path, extra_args=("--ray", "--address", cluster.address), env=cluster.client_env, ready_timeout=300
    )
    yield srv
    srv.stop()


def test_rec_replicas_run_on_both_raylets(cluster, server):
    replicas = cluster.wait_replicas(APP, "ocr-rec", 2)
    assert len(replicas) == 2, (replicas, cluster.titles())
    assert len({cluster.node_of(pid) for pid in replicas}) == 2
    assert len(cluster.raylets()) == 2


def test_same_lines_as_the_single_process_server(server, docs, single_process_answers):
    with PipelineClient(server.url, timeout=120) as client, ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda d: client.predict("ocr", image=png(d.image))[0], docs))
    assert [[(line["text"], line["box"]) for line in page] for page in answers] == [
        [(line["text"], line["box"]) for line in page] for page in single_process_answers
    ]
    assert sum(len(page) for page in answers) > 0


def test_same_http_api(server, docs):
    image = base64.b64encode(png(docs[0].image)).decode()
    native = requests.post(f"{server.url}/ocr/predict", json={"inputs": [{"image": image}], "timing": True}, timeout=60)
    assert native.status_code == 200, native.text
    body = native.json()
    assert body["results"][0] and set(body["timing"][0]["ops"]) == {"det", "rec"}
    paddle = requests.post(f"{server.url}/ocr/prediction", json={"key": ["image"], "value": ["bm90IGFuIGltYWdl"]})
    assert paddle.status_code == 400 and paddle.json()["err_no"] == 400
    assert requests.get(f"{server.url}/health/live", timeout=5).status_code == 200
    assert requests.get(f"{server.url}/health/ready", timeout=5).status_code == 200
    assert requests.post(f"{server.url}/nope/predict", json={}, timeout=5).status_code == 404
    listing = requests.get(f"{server.url}/pipelines", timeout=5).json()
    assert [p["name"] for p in listing["pipelines"]] == ["ocr"]


def test_metrics_gather_every_replica(server):
    deadline = time.monotonic() + 30
    while True:
        text = requests.get(f"{server.url}/metrics", timeout=10).text
        replicas = {line.split('replica="', 1)[1].split('"', 1)[0] for line in text.splitlines() if 'replica="' in line}
        ops = {r.rsplit("-", 1)[0] for r in replicas}
        if {"det", "rec", "ingress"} <= ops or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert {"det", "rec", "ingress"} <= ops, replicas
    assert "batchline_op_batch_size_bucket" in text and "batchline_requests_total" in text


def test_both_ingress_replicas_feed_shared_batches(server, docs):
    """Requests reach both ingress replicas, and the det replica batches images of several requests."""
    with PipelineClient(server.url, timeout=120) as client, ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda d: client.predict("ocr", image=png(d.image)), docs * 2))
        # one page 16 times, 8 at once: det only batches images of one size (max_padding_ratio 0),
        # and with its instance busy the next ones queue, however slow the machine
        page = png(docs[0].image)
        list(pool.map(lambda _: client.predict("ocr", image=page), range(16)))
    time.sleep(1.5)  # three metric pushes
    families = {f.name: f for f in text_string_to_metric_families(requests.get(f"{server.url}/metrics").text)}
    served = {
        s.labels["replica"]: s.value
        for s in families["batchline_requests"].samples
        if s.name == "batchline_requests_total" and s.labels["status"] == "200"
    }
    assert len([r for r, n in served.items() if r.startswith("ingress-") and n > 0]) == 2, served
    det = [s for s in families["batchline_op_batch_size"].samples if s.labels["op"] == "det"]
    dispatches = sum(s.value for s in det if s.name == "batchline_op_batch_size_count")
    of_one = sum(s.value for s in det if s.name == "batchline_op_batch_size_bucket" and s.labels["le"] == "1.0")
    assert dispatches > of_one, (dispatches, of_one)  # some det dispatches held two requests' images


def test_killed_rec_replica_is_replaced_and_no_request_hangs(cluster, server, docs):
    images = [base64.b64encode(png(d.image)).decode() for d in docs]
    statuses: collections.Counter[int] = collections.Counter()
    slowest = 0.0
    stop_at = time.monotonic() + 20

    def client(i: int) -> None:
        nonlocal slowest
        with requests.Session() as session:
            while time.monotonic() < stop_at:
                began = time.monotonic()
                # a hang would outlive the 30 s request deadline: the client's timeout would raise
                r = session.post(
                    f"{server.url}/ocr/prediction",
                    json={"key": ["image"], "value": [images[i % len(images)]]},
                    timeout=60,
                )
                statuses[r.status_code] += 1
                slowest = max(slowest, time.monotonic() - began)
                i += 1

    victim = cluster.wait_replicas(APP, "ocr-rec", 2)[0]
    with ThreadPoolExecutor(4) as pool:
        clients = [pool.submit(client, i) for i in range(4)]
        time.sleep(5)
        os.kill(victim, signal.SIGKILL)
        for c in clients:
            c.result()
    assert set(statuses) <= {200, 503, 504}, statuses
    assert statuses[200] >= 0.9 * sum(statuses.values()), statuses
    assert slowest < 35, slowest
    end = time.monotonic() + 180  # Ray restarts the replica; it loads and warms its model
    while time.monotonic() < end:
        alive = cluster.replicas(APP, "ocr-rec")
        if len(alive) == 2 and victim not in alive:
            break
        time.sleep(1)
    assert len(alive) == 2 and victim not in alive, alive
    with PipelineClient(server.url, timeout=120) as c:
        assert c.predict("ocr", image=png(docs[1].image))[0]


def test_a_second_application_deployed_through_ray_client(cluster, server, tmp_path):
    """``--address ray://...`` (Ray Client, as from another machine): a fake-op pipeline as a second
    application beside OCR, behind the proxies the first one started (its own route prefix)."""
    config = {
        "name": "fake",
        "ray": {"app_name": "fake", "route_prefix": "/fake", "ingress": {"ray_actor_options": {"num_cpus": 0}}},
        "op": {
            "split": {"class": "tests.support.engine_fakes:TextSplitOp", "ray": {"ray_actor_options": {"num_cpus": 0}}}
        },
    }
    path = tmp_path / "fake.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    second = ServerProcess(
        str(path),
        port=server.port,
        extra_args=("--ray", "--address", cluster.client_address),
        env=cluster.client_env,
        wait_ready=False,
    )
    try:
        end = time.monotonic() + 180
        answer = None
        while time.monotonic() < end and second.proc.poll() is None:
            try:
                answer = requests.post(f"{server.url}/fake/fake/predict", json={"inputs": [{"text": "3 2"}]}, timeout=5)
                if answer.status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(1)
        assert answer is not None and answer.status_code == 200, second.log()
        assert answer.json() == {"results": [{"id": 3, "values": [600.0, 602.0]}]}  # 300, 301 doubled
        assert requests.get(f"{server.url}/health/ready", timeout=5).status_code == 200  # OCR still there
        assert second.terminate(timeout=120) == 0, second.log()
        assert not cluster.replicas("fake", "fake-split")
    finally:
        second.stop()


def test_shutdown_leaves_no_ray_process(cluster, server):
    assert server.terminate(timeout=120) == 0, server.log()
    # the application is gone: no replica of it is left on the cluster
    end = time.monotonic() + 60
    while time.monotonic() < end and any(cluster.replicas(APP, d) for d in ("ocr-det", "ocr-rec", "ingress")):
        time.sleep(0.5)
    assert not any(cluster.replicas(APP, d) for d in ("ocr-det", "ocr-rec", "ingress"))
    assert cluster.processes()
    assert cluster.stop() == set()
    assert cluster.processes() == set()
