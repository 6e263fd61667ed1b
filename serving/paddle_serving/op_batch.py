"""One batch of requests through a Paddle Serving op's hooks, with Paddle Serving 0.9's
semantics: ``preprocess`` per request, one ``process`` for the batch (dict feeds merged along
axis 0; a list of feeds run one ``process`` call each), its outputs split back by each
request's rows, ``postprocess`` per request. A hook's exception, a ``prod_errcode`` or a wrong
type fails its own request with the ``err_no``/``err_msg`` Paddle Serving gives it; the hooks
run in this order on one op instance, so state kept on ``self`` between them is as safe as it
is in Paddle Serving (one batch at a time per instance)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from serving.paddle_serving.channel import ChannelData, ChannelDataErrcode, output_channel_data
from serving.paddle_serving.operator import Op

log = logging.getLogger(__name__)

OK = ChannelDataErrcode.OK.value
# where Paddle Serving's ErrorCatch found the failing call: its messages name these
_HELPERS = {
    "preprocess": "Op._run_preprocess.<locals>.preprocess_help",
    "postprocess": "Op._run_postprocess.<locals>.postprocess_help",
}


@dataclass
class Item:
    """One request at one op: the outputs of its input ops by name, and its ids."""

    input_dicts: dict[str, Any]
    data_id: int
    log_id: Any


class _TypeFault(Exception):
    """Paddle Serving's CustomException(TYPE_ERROR, ..., is_send_to_user=True)."""


def _caught(stage: str, log_id: Any, exc: BaseException) -> tuple[int, str]:
    """(err_no, err_msg) as Paddle Serving's ErrorCatch writes them for a failing hook."""
    helper = _HELPERS[stage]
    name = helper.rsplit(".", 1)[1]
    if isinstance(exc, _TypeFault):
        code, raised = ChannelDataErrcode.TYPE_ERROR.value, f" {exc}"
    else:
        code, raised = ChannelDataErrcode.UNKNOW.value, str(exc).replace("'", "")
    return code, f"Log_id: {log_id}  Raise_msg: {raised}  ClassName: {helper}  FunctionName: {name}"


def _error(item: Item, code: int, info: str) -> ChannelData:
    return ChannelData(error_code=code, error_info=info, data_id=item.data_id, log_id=item.log_id)


def _product_error(item: Item, code: Any, info: Any) -> ChannelData:
    return ChannelData(
        error_code=ChannelDataErrcode.PRODUCT_ERROR.value,
        error_info="",
        prod_error_code=code,
        prod_error_info=info,
        data_id=item.data_id,
        log_id=item.log_id,
    )


def _rows(feed: dict) -> int:
    """How many rows a dict feed gives its request (its first value's length, else 1)."""
    for value in feed.values():
        return len(value) if isinstance(value, (list, np.ndarray)) else 1
    return 0


def _merge(feeds: list[dict]) -> dict:
    merged: dict[str, Any] = {}
    for feed in feeds:
        for key, value in feed.items():
            if key not in merged:
                merged[key] = value
            elif isinstance(value, np.ndarray):
                merged[key] = np.append(merged[key], value, axis=0)
    return merged


class OpBatch:
    """Runs batches on one ``op`` instance; ``prefix`` names the worker in messages (``[name|idx]``)."""

    def __init__(self, op: Op, worker_index: int | None = None):
        self.op = op
        self.prefix = f"[{op.name}|{worker_index}]"

    def run(self, items: list[Item]) -> list[ChannelData]:
        outcomes: dict[int, ChannelData] = {}
        preped: dict[int, Any] = {}
        skipped: dict[int, bool] = {}
        for i, item in enumerate(items):
            try:
                result = self.op.preprocess(item.input_dicts, item.data_id, item.log_id)
                feed, skip, prod_code, prod_info = result
            except Exception as exc:  # noqa: BLE001 - the request's own failure, as Paddle Serving reports it
                log.error("%s preprocess failed (log_id %s)", self.prefix, item.log_id, exc_info=True)
                outcomes[i] = _error(item, *_caught("preprocess", item.log_id, exc))
                continue
            if skip is True:
                skipped[i] = True
            if prod_code is not None:
                outcomes[i] = _product_error(item, prod_code, prod_info)
            else:
                preped[i] = feed
        if preped:
            middles, failed = self._process(items, preped, skipped)
            outcomes.update(failed)
            for i, middle in middles.items():
                outcomes[i] = self._postprocess(items[i], middle)
        return [outcomes[i] for i in range(len(items))]

    def _process(
        self, items: list[Item], preped: dict[int, Any], skipped: dict[int, bool]
    ) -> tuple[dict[int, Any], dict[int, ChannelData]]:
        ids = list(preped)
        if not self.op.with_serving or (len(ids) == 1 and skipped.get(ids[0])):
            return dict(preped), {}
        data_ids = [items[i].data_id for i in ids]
        typical = data_ids[0]
        first = preped[ids[0]]
        offsets: dict[int, tuple[int, int]] = {}
        cursor = 0
        if isinstance(first, dict):
            batch_input = False
            feeds = [preped[i] for i in ids]
            feed_batch = [feeds[0]] if len(ids) == 1 else [_merge(feeds)]
            for i in ids:
                rows = _rows(preped[i]) if isinstance(preped[i], dict) else 1
                offsets[i] = (cursor, cursor + rows)
                cursor += rows
        elif isinstance(first, list):
            batch_input = True
            feed_batch = []
            for i in ids:
                feed_batch.extend(preped[i])
                offsets[i] = (cursor, cursor + len(preped[i]))
                cursor += len(preped[i])
        else:
            info = f"expect input type is dict or list, but get {type(first)}"
            return {}, {i: _error(items[i], ChannelDataErrcode.TYPE_ERROR.value, info) for i in ids}
        middle: Any = None
        code, info = OK, ""
        try:
            if not batch_input:
                middle, code, info = self.op.process(feed_batch, typical)
            else:
                middle = []
                for feed in feed_batch:
                    one, code, info = self.op.process([feed], typical)
                    if code != OK:
                        break
                    middle.append(one)
        except Exception as exc:  # noqa: BLE001 - fails the batch's requests, as Paddle Serving does
            code = ChannelDataErrcode.UNKNOW.value
            info = f"(data_id={data_ids[0]} log_id={typical}) {self.prefix} Failed to process(batch: {data_ids}): {exc}"
            log.error("%s", info, exc_info=True)
        if code != OK or middle is None:
            info = (
                f"[{self.op.name}] failed to predict. {info}. Please check the input dict and checkout "
                "PipelineServingLogs/pipeline.log for more details."
            )
            return {}, {i: _error(items[i], code, info) for i in ids}
        if batch_input:
            return {i: middle[a:b] for i, (a, b) in offsets.items()}, {}
        return _split(middle, offsets), {}

    def _postprocess(self, item: Item, middle: Any) -> ChannelData:
        try:
            out, prod_code, prod_info = self.op.postprocess(item.input_dicts, middle, item.data_id, item.log_id)
            if not isinstance(out, dict):
                raise _TypeFault("postprocess should return dict")
        except Exception as exc:  # noqa: BLE001 - the request's own failure
            if not isinstance(exc, _TypeFault):
                log.error("%s postprocess failed (log_id %s)", self.prefix, item.log_id, exc_info=True)
            return _error(item, *_caught("postprocess", item.log_id, exc))
        if prod_code is not None:
            return _product_error(item, prod_code, prod_info)
        return output_channel_data(out, item.data_id, item.log_id)


def _split(middle: dict, offsets: dict[int, tuple[int, int]]) -> dict[int, dict]:
    """Each request's rows of a batch's fetch dict (LoD outputs by their ``.lod`` offsets)."""
    lod_names = {name for name in middle if f"{name}.lod" in middle}
    parts: dict[int, dict] = {i: {} for i in offsets}
    for name, value in middle.items():
        if name.endswith(".lod") and name[: -len(".lod")] in lod_names:
            continue
        for i, (a, b) in offsets.items():
            if name in lod_names:
                lod = middle[f"{name}.lod"]
                parts[i][name] = value[lod[a] : lod[b]]
                parts[i][f"{name}.lod"] = lod[a : b + 1] - lod[a]
            else:
                parts[i][name] = value[a:b]
    return parts
