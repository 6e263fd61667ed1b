"""How full dispatches are, in /metrics of the real app (LiveApp: waitress, the
Flask app, a started pipeline) on model-free ops: ``batchline_op_batch_fill``
(items ÷ max_batch_size) for every op, ``batchline_op_units_fill`` (padded
units ÷ max_batch_units) only for an op with a budget.

``split`` (SizedSplitOp) turns the text "id n units" into n items of that many
units, in one put, so the batches it forms do not depend on timing: with
max_batch_size 4 and a budget of 25, six items of 10 run as three batches of
two (a third would pad to 30). ``add`` takes a request's items in one put too.
"""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from client.pipeline_client import PipelineClient
from tests.support.engine_fakes import op_conf
from tests.support.live_app import LiveApp

SPLIT = {"max_batch_size": 4, "max_batch_units": 25, "batching_policy": "fixed", "max_queue_delay": 1000}


@pytest.fixture(scope="module")
def live():
    config = {
        "name": "fill",
        "op": {"split": op_conf("SizedSplitOp", **SPLIT), "add": op_conf("AddOp", ["split"], max_batch_size=8)},
    }
    with LiveApp(config) as app:
        yield app


def histogram(text: str, name: str, op: str) -> dict[str, float]:
    """One op's series of histogram ``name``: {"le=0.5": cumulative count, ..., "count", "sum"}."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name != name:
            continue
        for sample in family.samples:
            if sample.labels.get("op") != op or sample.name.endswith("_created"):
                continue
            assert sample.labels["pipeline"] == "fill" and sample.labels["version"] == "1"
            key = f"le={sample.labels['le']}" if "le" in sample.labels else sample.name.rsplit("_", 1)[1]
            out[key] = sample.value
    return out


def test_fill_of_every_dispatch_and_units_fill_only_where_there_is_a_budget(live):
    with PipelineClient(live.url) as c:
        assert c.predict("fill", text="1 6 10") == [{"id": 1, "values": [(100 + j) * 4 for j in range(6)]}]
        # one item of 40 units alone is over the budget of 25: it runs alone, units fill 1.6
        assert c.predict("fill", text="2 1 40") == [{"id": 2, "values": [800]}]
        text = c.metrics_text()

    batch = histogram(text, "batchline_op_batch_fill", "split")  # 2, 2, 2 and 1 of max 4
    assert batch["count"] == 4 and batch["sum"] == pytest.approx(3 * 0.5 + 0.25)
    assert (batch["le=0.1"], batch["le=0.25"], batch["le=0.5"], batch["le=1.0"], batch["le=+Inf"]) == (0, 1, 4, 4, 4)

    units = histogram(text, "batchline_op_units_fill", "split")  # 20, 20, 20 and 40 of 25
    assert units["count"] == 4 and units["sum"] == pytest.approx(3 * 0.8 + 1.6)
    assert (units["le=0.75"], units["le=0.9"], units["le=1.0"], units["le=+Inf"]) == (0, 3, 3, 4)

    add = histogram(text, "batchline_op_batch_fill", "add")  # 6 and 1 of max 8
    assert add["count"] == 2 and add["sum"] == pytest.approx(6 / 8 + 1 / 8)
    assert histogram(text, "batchline_op_units_fill", "add") == {}  # no budget, no series
