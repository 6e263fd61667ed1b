"""Fake ops and runners for engine tests: no model, deterministic outputs,
injectable failures. Request values are dicts like {"id": 7, "n": 3}."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from serving.errors import BadRequest
from serving.op import Op, SubBatch

FAKES = __name__  # how configs name these ops: f"{FAKES}:EchoTextOp"


class FakeRunner:
    """y = 2x, records the batch sizes it saw; optionally slow or failing."""

    def __init__(self, delay_s: float = 0.0, fail_when: Any = None):
        self.delay_s = delay_s
        self.fail_when = fail_when  # callable(values) -> bool: raise for this feed
        self.batch_sizes: list[int] = []
        self._busy = threading.Lock()

    input_names = ["x"]

    def close(self) -> None:
        self.closed = True

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Refuses concurrent use (the engine must never allow it), records the batch size, computes."""
        if not self._busy.acquire(blocking=False):
            raise AssertionError("two threads used one runner at once")
        try:
            self.batch_sizes.append(len(feed["x"]))
            return self.compute(feed)
        finally:
            self._busy.release()

    def compute(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        x = feed["x"]
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail_when is not None and self.fail_when(x.tolist()):
            raise RuntimeError("injected predictor failure")
        return [x * 2]


class FakeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    delay_ms: float = 0.0
    fail_value: float | None = None  # predictor raises when a batch holds this value
    bad_preprocess: float | None = None  # preprocess raises BadRequest on this value


class _FakeBase(Op):
    Params = FakeParams
    needs_model = False
    input_kind = "text"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.runners: list[FakeRunner] = []

    def create_runners(self, count: int) -> list[FakeRunner]:
        fail = self.params.fail_value
        self.runners = [
            FakeRunner(self.params.delay_ms / 1000.0, None if fail is None else (lambda xs, f=fail: f in xs))
            for _ in range(count)
        ]
        return self.runners

    def preprocess(self, payload: Any) -> Any:
        if self.params.bad_preprocess is not None and payload[1] == self.params.bad_preprocess:
            raise BadRequest(f"bad item {payload}")
        return payload

    def collate(self, items):
        x = np.array([float(v) for _, v in items], dtype=np.float32)
        return [
            SubBatch(indices=list(range(len(items))), feed={"x": x}, real_units=len(items), padded_units=len(items))
        ]

    def postprocess(self, item, output):
        return (item[0], float(output[0]))

    def warmup_items(self):
        return [("warm", 1.0)]


class SplitOp(_FakeBase):
    """Source op: {"id": r, "n": k} -> k items (r, r*100 + j); output: the doubled values."""

    def expand(self, inputs):
        value = inputs["input"]
        return [(value["id"], value["id"] * 100 + j) for j in range(value["n"])]

    def merge(self, inputs, results):
        rid = inputs["input"]["id"]
        assert all(r[0] == rid for r in results)
        return {"id": rid, "values": [r[1] for r in results]}


def _request_of(text: str) -> dict[str, int]:
    """The request a text stands for: "7 3" -> {"id": 7, "n": 3}."""
    try:
        rid, n = (int(part) for part in text.split())
    except ValueError:
        raise BadRequest(f"expected two integers 'id n', got {text[:40]!r}") from None
    return {"id": rid, "n": n}


class TextSplitOp(SplitOp):
    """SplitOp fed over HTTP: the request text "id n" stands for {"id": id, "n": n}."""

    def expand(self, inputs):
        return super().expand({"input": _request_of(inputs["input"])})

    def merge(self, inputs, results):
        return super().merge({"input": _request_of(inputs["input"])}, results)


class SizedSplitOp(SplitOp):
    """SplitOp whose items have a size, for ``max_batch_units``: {"id": r, "n": k,
    "units": u} (over HTTP the text "r k u") -> k items of u units each; a batch
    pads to its largest item."""

    pad_unit = "units"

    @staticmethod
    def _request(value: Any) -> dict[str, int]:
        if not isinstance(value, str):
            return value
        try:
            rid, n, units = (int(part) for part in value.split())
        except ValueError:
            raise BadRequest(f"expected three integers 'id n units', got {value[:40]!r}") from None
        return {"id": rid, "n": n, "units": units}

    def expand(self, inputs):
        value = self._request(inputs["input"])
        return [(value["id"], value["id"] * 100 + j, value["units"]) for j in range(value["n"])]

    def merge(self, inputs, results):
        return super().merge({"input": self._request(inputs["input"])}, results)

    def pad_extent(self, item):
        return (item[2],)

    def collate(self, items):
        (sub,) = super().collate([item[:2] for item in items])
        sub.real_units = sum(item[2] for item in items)
        sub.padded_units = len(items) * max(item[2] for item in items)
        return [sub]

    def warmup_items(self):
        return [("warm", 1.0, 4)]


class GroupedSizedSplitOp(SizedSplitOp):
    """SizedSplitOp whose collate runs each size as a call of its own, unpadded (as rec's width buckets)."""

    extent_groups = True

    def collate(self, items):
        subs = []
        for units in sorted({item[2] for item in items}):
            idx = [i for i, item in enumerate(items) if item[2] == units]
            (sub,) = super().collate([items[i] for i in idx])
            sub.indices = idx
            subs.append(sub)
        return subs


class AddOp(_FakeBase):
    """Downstream op: each upstream value -> one item; doubles again."""

    def expand(self, inputs):
        (upstream,) = inputs.values()
        return [(upstream["id"], v) for v in upstream["values"]]

    def merge(self, inputs, results):
        (upstream,) = inputs.values()
        return {"id": upstream["id"], "values": [r[1] for r in results]}


class JoinOp(_FakeBase):
    """Fan-in op: one item per request, combining both inputs; no inference needed per value."""

    def expand(self, inputs):
        ids = {v["id"] for v in inputs.values()}
        assert len(ids) == 1, f"join mixed requests: {ids}"
        return [(ids.pop(), float(sum(sum(v["values"]) for v in inputs.values())))]

    def merge(self, inputs, results):
        return {"id": results[0][0], "total": results[0][1], "parts": {k: v["values"] for k, v in inputs.items()}}


class EchoTextOp(_FakeBase):
    """Text in -> {"text", "double_len"}; "bad" fails preprocessing, "boom" the predictor."""

    def expand(self, inputs):
        return [inputs["input"]]

    def preprocess(self, payload):
        if payload == "bad":
            raise BadRequest("text 'bad' rejected")
        return (payload, -1.0 if payload == "boom" else float(len(payload)))

    def create_runners(self, count):
        self.runners = [FakeRunner(self.params.delay_ms / 1000.0, lambda xs: -1.0 in xs) for _ in range(count)]
        return self.runners

    def postprocess(self, item, output):
        return {"text": item[0], "double_len": int(output[0])}

    def merge(self, inputs, results):
        return results[0]


class FaultyHooksParams(FakeParams):
    # which hook breaks its contract once a batch holds request items (values >= 100; warm-up is spared)
    fault: Literal["short_uncollate", "short_run", "collate_drops", "collate_twice"] = "short_uncollate"


class FaultyHooksOp(SplitOp):
    """SplitOp whose hooks return the wrong number of results, to test the engine's checks."""

    Params = FaultyHooksParams

    def _faulty(self, items) -> bool:
        return any(v >= 100 for _, v in items)

    def collate(self, items):
        subs = super().collate(items)
        if self._faulty(items) and self.params.fault == "collate_drops":
            subs[0].indices = subs[0].indices[:-1]
        elif self._faulty(items) and self.params.fault == "collate_twice":
            subs[0].indices = subs[0].indices + subs[0].indices[:1]
        return subs

    def run(self, runner, feed):
        outputs = super().run(runner, feed)
        if self.params.fault == "short_run" and (feed["x"] >= 100).any():
            return [outputs[0][:-1]]
        return outputs

    def uncollate(self, sub, outputs):
        results = super().uncollate(sub, outputs)
        if self.params.fault == "short_uncollate" and (outputs[0] >= 200).any():
            return results[:-1]
        return results


class FailingLoadOp(SplitOp):
    """SplitOp whose load() fails, as a model with missing files would."""

    def load(self) -> None:
        raise RuntimeError("model files are missing")


class GateParams(FakeParams):
    gate: str  # a directory: load() touches <gate>/loading, then waits until <gate>/go exists


class GatedLoadOp(EchoTextOp):
    """EchoTextOp whose load() waits for a file, so a test holds a start or a reload
    at a known point (across processes too) and lets it go."""

    Params = GateParams

    def load(self) -> None:
        gate = Path(self.params.gate)
        (gate / "loading").touch()
        end = time.monotonic() + 120.0
        while not (gate / "go").exists():
            if time.monotonic() > end:
                raise RuntimeError(f"{gate / 'go'} never appeared")
            time.sleep(0.01)


def op_conf(
    cls: str,
    inputs: tuple[str, ...] | list[str] = (),
    params: dict[str, Any] | None = None,
    *,
    share: str | bool | None = None,
    ray: dict[str, Any] | None = None,
    module: str = FAKES,
    **svc: Any,
) -> dict[str, Any]:
    """One ``op:`` entry of a fake op (``cls`` of ``module``); ``svc``: local_service_conf keys."""
    conf: dict[str, Any] = {"max_batch_size": 8, "max_queue_delay": 2, "concurrency": 2, "instance_num": 1}
    conf.update(svc)
    out: dict[str, Any] = {
        "class": f"{module}:{cls}",
        "input_ops": list(inputs),
        "params": params or {},
        "local_service_conf": conf,
    }
    if share is not None:
        out["share"] = share
    if ray is not None:
        out["ray"] = ray
    return out
