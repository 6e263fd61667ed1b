"""Several pipelines in one real server (issue 12), with the real weights and
the bundled client:

* ``configs/repository/`` (ocr, ocr_ernie and ernie in one process, det and
  rec shared by ocr and ocr_ernie) answers as each pipeline served alone: OCR
  as PaddleOCR 2.10 (tests/data/ocr/), ERNIE and OCR->ERNIE as
  ``configs/ernie.yml`` and ``configs/ocr_ernie.yml`` served alone (the same
  settings: tests/unit/test_shipped_configs.py), although there the shared
  stages batch the items of both pipelines together.
* The shared rec stage runs crops of ocr and of ocr_ernie in one predictor
  call, seen in ``/metrics``.
* A reload under load (8 clients, a changed ``max_batch_size`` and a new
  version) answers every request.

Each server starts once per module (tens of seconds on 2 cores); the answers
of the pipelines served alone are computed once, before the repository
server starts, and those servers are stopped again.
"""

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
import yaml

from client import PipelineClient
from client.request_body import b64
from client.stats import MetricsSnapshot
from tests.support.ocr_reference import MIN_MATCH, match_rate_over_pages
from tests.support.server_process import ROOT, ServerProcess

pytestmark = pytest.mark.slow

REPOSITORY = "configs/repository"
TEXTS = {
    "2024-03-15": "date",
    "¥1,234.50": "money",
    "总计：345.00元": "money",
    "Tel: 138-1234-5678": "phone",
    "订单号 20240315001": "id",
    "北京市海淀区中关村大街1号": "address",
}
SCORE_TOL = 1e-4  # identical weights, inputs and settings; only what shares a batch differs
TOKEN = "e2e-reload-token"


def png(img):
    from tests.support.synth import encode_image

    return encode_image(img, ".png")


def predict_each(url, name, pages):
    """One request per page, in order, one at a time."""
    with PipelineClient(url, timeout=120) as client:
        return [client.predict(name, image=png(d.image))[0] for d in pages]


def ocr_lines(lines):
    """OCR->ERNIE lines without the ERNIE fields: what the ocr pipeline answers."""
    return [{k: line[k] for k in ("text", "score", "box")} for line in lines]


def assert_same_lines(ours, alone, where):
    """Same lines (text, box, labels) in the same order; scores within SCORE_TOL."""
    assert len(ours) == len(alone), (where, ours, alone)
    for i, (a, b) in enumerate(zip(ours, alone)):
        assert set(a) == set(b), (where, i, a, b)
        for key in a:
            if key in ("score", "label_score"):
                assert abs(a[key] - b[key]) <= SCORE_TOL, (where, i, key, a, b)
            else:
                assert a[key] == b[key], (where, i, key, a, b)


@pytest.fixture(scope="module")
def alone(docs, short_docs):
    """Answers of ernie and ocr_ernie, each served alone by its own config (computed once)."""
    with ServerProcess("configs/ernie.yml") as srv, PipelineClient(srv.url, timeout=60) as client:
        ernie = client.predict("ernie", texts=list(TEXTS))
    with ServerProcess("configs/ocr_ernie.yml") as srv:
        ocr_ernie = predict_each(srv.url, "ocr_ernie", docs)
        ocr_ernie_short = predict_each(srv.url, "ocr_ernie", short_docs)
    return {"ernie": ernie, "ocr_ernie": ocr_ernie, "ocr_ernie_short": ocr_ernie_short}


@pytest.fixture(scope="module")
def repo_server(alone, tmp_path_factory):
    """configs/repository/ with the shared rec stage under ``batching_policy: fixed``.
    The shipped adaptive policy runs crops one at a time on a CPU where its warmed-up cost
    model finds that batching saves too little (which depends on the machine); this one
    always batches what its queue holds, so crops of both pipelines share predictor calls.
    Answers do not depend on the policy (same padding either way)."""
    folder = tmp_path_factory.mktemp("repository")
    for name in sorted(os.listdir(os.path.join(ROOT, REPOSITORY))):
        with open(os.path.join(ROOT, REPOSITORY, name), encoding="utf-8") as f:
            data = yaml.safe_load(f)
        if "rec" in data.get("op", {}):
            data["op"]["rec"]["local_service_conf"]["batching_policy"] = "fixed"
        (folder / name).write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    # ``alone`` first: its servers are stopped before this one starts (2 cores)
    with ServerProcess(str(folder)) as srv:
        yield srv


def test_the_repository_serves_three_pipelines_sharing_det_and_rec(repo_server):
    listing = requests.get(repo_server.url + "/pipelines", timeout=30).json()
    assert listing["generation"] == 1 and listing["ready"]
    assert sorted((p["name"], p["version"], p["state"]) for p in listing["pipelines"]) == [
        ("ernie", 1, "serving"),
        ("ocr", 1, "serving"),
        ("ocr_ernie", 1, "serving"),
    ]
    assert listing["shared_ops"] == {"det": ["ocr/v1", "ocr_ernie/v1"], "rec": ["ocr/v1", "ocr_ernie/v1"]}


def test_ocr_answers_as_paddleocr_and_as_ocr_ernie_alone(repo_server, docs, reference, alone):
    answers = predict_each(repo_server.url, "ocr", docs)
    rate, misses = match_rate_over_pages(reference, answers)
    assert rate >= MIN_MATCH, (rate, misses)
    # ocr shares det and rec with ocr_ernie: its lines are ocr_ernie's (served alone) without the labels
    for i, (ours, theirs) in enumerate(zip(answers, alone["ocr_ernie"])):
        assert_same_lines(ours, ocr_lines(theirs), f"page {i}")


def test_ernie_answers_as_served_alone(repo_server, alone):
    with PipelineClient(repo_server.url, timeout=60) as client:
        answers = client.predict("ernie", texts=list(TEXTS))
    assert [a["label"] for a in answers] == list(TEXTS.values())
    for a, b in zip(answers, alone["ernie"]):
        assert a["label"] == b["label"] and a["probs"].keys() == b["probs"].keys()
        assert abs(a["score"] - b["score"]) <= SCORE_TOL, (a, b)


def test_ocr_ernie_answers_as_served_alone(repo_server, docs, alone):
    answers = predict_each(repo_server.url, "ocr_ernie", docs)
    assert any(line["label"] != "other" for page in answers for line in page)  # ERNIE labels something
    for i, (ours, theirs) in enumerate(zip(answers, alone["ocr_ernie"])):
        assert_same_lines(ours, theirs, f"page {i}")


def test_shared_rec_runs_items_of_ocr_and_ocr_ernie_in_one_predictor_call(
    repo_server, short_docs, short_reference, alone
):
    # Every rec crop of the short-line pages pads to 320 px (PaddleOCR's padding), so
    # crops of any two requests may share a call; each page goes to both pipelines,
    # 16 requests in flight keep the rec queue full enough to batch.
    jobs = [(name, i) for i in range(len(short_docs)) for name in ("ocr", "ocr_ernie")]

    def one(job):
        name, i = job
        with PipelineClient(repo_server.url, timeout=300) as client:
            return client.predict(name, image=png(short_docs[i].image))[0]

    with PipelineClient(repo_server.url) as client:
        before = MetricsSnapshot.from_text(client.metrics_text())
        with ThreadPoolExecutor(16) as pool:
            answers = dict(zip(jobs, pool.map(one, jobs)))
        after = MetricsSnapshot.from_text(client.metrics_text())

    shared = {"pipeline": "shared", "version": "", "op": "rec"}
    calls = after.delta(before, "batchline_op_call_pipelines_count", **shared)
    one_pipeline = after.delta(before, "batchline_op_call_pipelines_bucket", le="1.0", **shared)
    assert calls > 0 and one_pipeline < calls, (one_pipeline, calls)  # a call held crops of both pipelines
    for name in ("ocr", "ocr_ernie"):
        sent = after.delta(before, "batchline_shared_op_requests_total", op="rec", pipeline=name)
        assert sent >= len(short_docs), (name, sent)

    # ... and batching across pipelines changes no answer
    ocr = [answers["ocr", i] for i in range(len(short_docs))]
    rate, misses = match_rate_over_pages(short_reference, ocr)
    assert rate >= MIN_MATCH, (rate, misses)
    for i, theirs in enumerate(alone["ocr_ernie_short"]):
        assert_same_lines(answers["ocr_ernie", i], theirs, f"short page {i}")
        assert_same_lines(ocr[i], ocr_lines(theirs), f"short page {i} (ocr)")


# ---- reload under load --------------------------------------------------------------------------


def rec_config(max_batch_size, version=None):
    """configs/rec.yml (one op: a text-line crop -> its text) with a bearer token, for
    predictions and reload alike (equal tokens: one works for both)."""
    with open(f"{ROOT}/configs/rec.yml", encoding="utf-8") as f:
        config = yaml.safe_load(f)
    config["auth_token"] = config["admin_token"] = TOKEN
    config["op"]["rec"]["local_service_conf"]["max_batch_size"] = max_batch_size
    if version is not None:
        config["version"] = version
    return yaml.safe_dump(config, allow_unicode=True, sort_keys=False)


class Load:
    """``clients`` threads, each with its own client, sending crops one after another until stopped."""

    def __init__(self, url, crops, clients=8):
        self.url = url
        self.crops = [png(c.image) for c in crops]
        self.answers = []  # (crop index, version, text, monotonic time answered)
        self.failures = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(k,), daemon=True) for k in range(clients)]

    def _run(self, k):
        with PipelineClient(self.url, timeout=120, token=TOKEN) as client:
            n = k
            while not self._stop.is_set():
                i = n % len(self.crops)
                n += 1
                try:
                    body = client.predict_raw("rec", {"inputs": [{"image": b64(self.crops[i])}]}, protocol="native")
                    (result,) = body["results"]
                    with self._lock:
                        self.answers.append((i, body.get("version", 1), result["text"], time.monotonic()))
                except Exception as exc:  # noqa: BLE001 - every failure is counted, none ends the client
                    with self._lock:
                        self.failures.append(repr(exc))

    def __enter__(self):
        for t in self._threads:
            t.start()
        return self

    def wait_answers(self, n, timeout=120):
        end = time.monotonic() + timeout
        while len(self.answers) < n:
            assert time.monotonic() < end, f"only {len(self.answers)} answers after {timeout}s"
            assert not self.failures, self.failures[:5]
            time.sleep(0.05)

    def __exit__(self, *exc):
        self._stop.set()
        for t in self._threads:
            t.join(180)


def test_reload_under_load_answers_every_request(tmp_path):
    from tests.support import ocr_data

    repo = tmp_path / "repository"
    repo.mkdir()
    (repo / "rec.yml").write_text(rec_config(32), encoding="utf-8")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with ServerProcess(str(repo)) as srv:
        with Load(srv.url, ocr_data.rec_crops()) as load:
            load.wait_answers(40)
            # no token: refused, nothing changes
            assert requests.post(srv.url + "/admin/reload", timeout=30).status_code == 401
            assert requests.get(srv.url + "/pipelines", headers=headers, timeout=30).json()["generation"] == 1

            (repo / "rec.yml").write_text(rec_config(8), encoding="utf-8")
            (repo / "rec_v2.yml").write_text(rec_config(8, version=2), encoding="utf-8")
            asked = time.monotonic()
            r = requests.post(srv.url + "/admin/reload", headers=headers, timeout=300)
            switched = time.monotonic()
            assert r.status_code == 200, r.text
            report = r.json()
            assert report["generation"] == 2, report
            assert report["added"] == ["rec/v2"] and report["changed"] == ["rec/v1"], report
            load.wait_answers(len(load.answers) + 40)  # the new generation serves under the same load

        config = requests.get(srv.url + "/rec/config", headers=headers, timeout=30).json()
        config_v1 = requests.get(srv.url + "/rec/v1/config", headers=headers, timeout=30).json()
        listing = requests.get(srv.url + "/pipelines", headers=headers, timeout=30).json()

    assert not load.failures, load.failures[:5]
    assert (config["version"], config["generation"]) == (2, 2), config
    assert [op["max_batch_size"] for op in config["ops"]] == [8], config
    assert (config_v1["version"], [op["max_batch_size"] for op in config_v1["ops"]]) == (1, [8]), config_v1
    assert listing["generation"] == 2, listing
    assert sorted((p["name"], p["version"], p["state"]) for p in listing["pipelines"]) == [
        ("rec", 1, "serving"),
        ("rec", 2, "serving"),
    ]

    during = [a for a in load.answers if asked <= a[3] <= switched]
    assert during, "no request was answered while the reload built and warmed the new pipelines"
    assert {a[1] for a in load.answers if a[3] < asked} == {1}
    assert 2 in {a[1] for a in load.answers if a[3] > switched}  # the default is now the highest version
    # every crop reads alike before, during and after the reload, by either version
    texts = {}
    for i, _version, text, _t in load.answers:
        texts.setdefault(i, set()).add(text)
    assert all(len(t) == 1 for t in texts.values()), texts
