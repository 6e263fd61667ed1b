"""deploy/grafana/: the dashboard is a well-formed Grafana dashboard whose every
query parses as PromQL and names only metrics a running server exports, and
prometheus.yml scrapes the path and port the server serves.

The server is the real one (``batchline serve`` in a child process) on the
fault-injection op with predictor processes, ``max_rss_mb`` and
``max_batch_units``, so the process and budget metrics exist; a few requests
make the histograms and labelled series appear. That server has no GPU (nor
may a child process be handed a fake NVML), so the GPU row's families come
from a second, in-process server (LiveApp) with a fake NVML: the dashboard
must read only what one of the two exports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import requests
import yaml
from prometheus_client.parser import text_string_to_metric_families

from serving.config import parse_config
from tests.support.engine_fakes import op_conf
from tests.support.fake_nvml import FakeGpu, FakeNvml
from tests.support.fault_op import fault_config
from tests.support.image_fakes import encode_png, make_image
from tests.support.live_app import LiveApp
from tests.support.reliability.known_good import paddle_body
from tests.support.server_process import ROOT, ServerProcess
from tests.support.waiting import until

GRAFANA = Path(ROOT) / "deploy" / "grafana"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# Grafana's range variables, which PromQL itself cannot parse
RANGES = {"$__rate_interval": "1m", "$__interval": "1m", "$__range": "1h"}
# sample names a family of each type exports (prometheus_client's text format)
SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gauge": ("",),
}
IMAGE = make_image(48, 32, seed=3)  # 1,536 pixels: the budget below holds 4
BUDGET = 4 * 48 * 32


def load_dashboard() -> dict[str, Any]:
    return json.loads((GRAFANA / "batchline.json").read_text(encoding="utf-8"))


def query_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel that queries (rows only group panels)."""
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) of every panel target and every template variable that queries Prometheus."""
    for panel in query_panels(dashboard):
        for target in panel["targets"]:
            yield f"panel {panel['title']!r} target {target['refId']}", target["expr"]
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            # label_values(<series selector>, <label>): the selector is PromQL
            match = re.fullmatch(r"label_values\((.+),\s*\w+\)", var["definition"])
            assert match, f"variable {var['name']}: expected label_values(selector, label), got {var['definition']}"
            yield f"variable {var['name']!r}", match.group(1)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads; fails on a query that does not parse."""
    for variable, value in RANGES.items():
        expr = expr.replace(variable, value)
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            assert node.name, f"name the metric in {expr!r}"
            names.add(node.name)

    promql_parser.walk(promql_parser.parse(expr), visit)
    return names


# ---- the dashboard alone -------------------------------------------------------------------
def test_panels_have_unique_ids_a_datasource_and_queries():
    dashboard = load_dashboard()
    assert dashboard["uid"] == "batchline" and dashboard["title"] and dashboard["schemaVersion"] >= 36
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)), f"duplicate panel ids: {sorted(ids)}"
    for panel in dashboard["panels"]:
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"]) and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] == "row":
            assert "targets" not in panel and not panel["panels"], panel["title"]
            continue
        assert panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], f"panel {panel['title']!r} has no queries"
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE and target["expr"].strip(), panel["title"]


def test_every_query_parses_and_reads_batchline_metrics():
    for where, expr in queries(load_dashboard()):
        names = metric_names(expr)
        assert names, f"{where}: reads no metric"
        assert all(n.startswith("batchline_") for n in names), f"{where}: {sorted(names)}"


def test_template_variables_are_defined_and_used():
    dashboard = load_dashboard()
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert set(variables) == {"datasource", "pipeline", "op"}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for name in ("pipeline", "op"):
        assert variables[name]["datasource"] == DATASOURCE and variables[name]["includeAll"]
    panels = json.dumps(dashboard["panels"])
    for name in variables:
        assert f"${name}" in panels or f"${{{name}}}" in panels, f"variable {name} is used by no panel"
    # the op choices follow the pipeline choice
    assert "$pipeline" in variables["op"]["definition"]
    # a query without the op filter would mix every op of the pipeline into one line
    for panel in query_panels(dashboard):
        for target in panel["targets"]:
            if "batchline_op_" in target["expr"]:
                assert target["expr"].count('op=~"$op"') == target["expr"].count("batchline_op_"), panel["title"]


# ---- against a running server --------------------------------------------------------------
@pytest.fixture(scope="module")
def scrape(tmp_path_factory) -> str:
    """/metrics of a real server after a few requests, read at prometheus.yml's metrics path."""
    service = {"instance_mode": "process", "max_rss_mb": 500, "max_batch_units": BUDGET}
    path = tmp_path_factory.mktemp("grafana") / "img.yml"
    path.write_text(fault_config(name="img", service=service))
    metrics_path = prometheus_job()["metrics_path"]
    with ServerProcess(str(path), ready_timeout=120) as server:
        body = paddle_body(encode_png(IMAGE))
        for _ in range(4):
            assert requests.post(f"{server.url}/img/prediction", data=body, timeout=60).status_code == 200

        def text() -> str:
            return requests.get(server.url + metrics_path, timeout=10).text

        # predictor processes report their memory every 0.5 s
        assert until(lambda: "batchline_op_instance_rss_bytes{" in text(), timeout=30)
        return text()


@pytest.fixture(scope="module")
def gpu_scrape() -> str:
    """/metrics of a server whose NVML (a fake) sees one GPU."""
    config = {"name": "gpu", "op": {"add": op_conf("AddOp")}}
    with LiveApp(config, nvml=FakeNvml([FakeGpu(utilization=40, used=1 << 30)])) as live:
        return requests.get(live.url + prometheus_job()["metrics_path"], timeout=10).text


def exported(*texts: str) -> tuple[set[str], set[str]]:
    """(sample names that have samples, sample names of every declared family) of these scrapes."""
    families = [f for text in texts for f in text_string_to_metric_families(text)]
    with_samples = {s.name for f in families for s in f.samples}
    declared = {f.name + suffix for f in families for suffix in SUFFIXES.get(f.type, ("",))}
    return with_samples, declared


def test_every_metric_the_dashboard_reads_is_exported(scrape, gpu_scrape):
    with_samples, declared = exported(scrape, gpu_scrape)
    read = {name: where for where, expr in queries(load_dashboard()) for name in metric_names(expr)}
    unknown = {name: where for name, where in read.items() if name not in declared}
    assert not unknown, f"the dashboard reads metrics the server does not export: {unknown}"
    # process stages publish their restart and recycle counters at 0, so every panel has a series
    silent = set(read) - with_samples
    assert not silent, f"exported, but no series after requests: {sorted(silent)}"
    # the panels of this change have data: fills, and the budget's
    assert {"batchline_op_batch_fill_bucket", "batchline_op_units_fill_bucket"} <= with_samples
    # the GPU row: the GPU families only where NVML sees a GPU, where each instance runs everywhere
    gpu_row = {"batchline_gpu_utilization_ratio", "batchline_gpu_memory_used_bytes", "batchline_gpu_memory_total_bytes"}
    assert gpu_row <= set(read) and gpu_row <= exported(gpu_scrape)[0]
    assert "batchline_op_instance_device" in exported(scrape)[0]


def test_a_metric_named_without_the_suffix_it_is_exported_with_counts_as_unknown(scrape):
    _, declared = exported(scrape)
    assert "batchline_op_instance_restarts_total" in declared and "batchline_op_batch_fill_bucket" in declared
    for wrong in ("batchline_op_instance_restarts", "batchline_op_batch_fill", "batchline_request_seconds_total"):
        assert wrong not in declared


# ---- prometheus.yml ---------------------------------------------------------------------------
def prometheus_job() -> dict[str, Any]:
    config = yaml.safe_load((GRAFANA / "prometheus.yml").read_text(encoding="utf-8"))
    (job,) = config["scrape_configs"]
    return job


def test_prometheus_scrapes_the_servers_metrics_port():
    job = prometheus_job()
    assert job["job_name"] == "batchline" and job["metrics_path"] == "/metrics"
    default_port = parse_config({"op": {"a": {"class": "tests.support.config_fakes:FakeOp"}}}).http_port
    (static,) = job["static_configs"]
    assert [t.rsplit(":", 1)[1] for t in static["targets"]] == [str(default_port)]
