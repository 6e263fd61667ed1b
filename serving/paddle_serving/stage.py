"""A Paddle Serving op as one of batchline's engine ops. The engine batches requests for it
(``batch_size`` / ``auto_batching_timeout``, or batchline's own keys), and hands each batch to
one of the op's workers, which runs the user's hooks on it (:class:`OpBatch`):

- a thread op (``is_thread_op: True``): one instance of the user's ``Op`` shared by
  ``concurrency`` workers in the server's process, each with its own model instance;
- a process op: ``concurrency`` predictor processes, each with its own instance of the
  user's ``Op`` (read again from the script there) and its own model, supervised like any
  ``instance_mode: process`` instance (restarts, ``max_rss_mb``).

Requests travel between ops as :class:`ChannelData`: an error upstream skips the op, as
Paddle Serving passes an error on to the response."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import os
import pickle
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from serving.op import Op as EngineOp
from serving.op import OpContext, Runner, SubBatch
from serving.paddle_serving.channel import ChannelData, ChannelDataType
from serving.paddle_serving.model_folder import ModelFolder, read_model_folder
from serving.paddle_serving.op_batch import Item, OpBatch
from serving.paddle_serving.operator import DAG_EXECUTOR
from serving.paddle_serving.predictor import LocalPredictor
from serving.paddle_serving.service_file import Service, read_service

log = logging.getLogger(__name__)

#: the input kind of an op fed by the request: one request (its unpacked dict) is one value
PADDLE_REQUEST = "paddle_request"
BATCH = "batch"


class StageParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    script: str  # the web_service.py the op is defined in
    script_args: list[str] = []  # its command line, as given after it to batchline serve
    script_digest: str = ""  # its content's: a changed script is a changed config (reload)
    op: str  # its name there
    thread_op: bool = True
    fetch_list: list[str] | None = None  # what the default process() asks the model for
    # OpenVINO Runtime was chosen for the op, not by its config: Paddle Inference runs a model it cannot read
    engine_fallback: bool = False


@dataclass(frozen=True)
class Unpacked:
    """A request after its ``RequestOp``: what the first ops take."""

    data: dict
    data_id: int
    log_id: Any


def _loaded(conf: Any, fallback: bool, load: Callable[[Any], Any]) -> Any:
    """``load(local_service_conf)``; when OpenVINO Runtime was only the default and cannot read
    the model (operators its Paddle frontend lacks, e.g. the legacy ``mul``), Paddle Inference."""
    try:
        return load(conf)
    except Exception as exc:  # noqa: BLE001 - any load failure of the default engine
        if not fallback or conf.engine != "openvino":
            raise
        log.warning("OpenVINO Runtime cannot run %s (%s): Paddle Inference runs it", conf.model_config, exc)
        return load(dataclasses.replace(conf, engine="paddle"))


def _model(conf: Any) -> tuple[ModelFolder | None, bool]:
    path = conf.local_service_conf.model_config
    return (read_model_folder(path), True) if path else (None, False)


class _ThreadClient:
    """A thread op's ``client``: the model instance of the worker calling it (Paddle Serving
    shares one predictor between a thread op's threads; here each worker has its own)."""

    def __init__(self, first: LocalPredictor) -> None:
        self.local = threading.local()
        self.feed_names_ = first.feed_names_
        self.fetch_names_ = first.fetch_names_

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        return self.local.predictor.predict(*args, **kwargs)


class ThreadWorker:
    """One worker of a thread op: the shared user op, this worker's model instance."""

    def __init__(self, batch: OpBatch, client: _ThreadClient | None, predictor: LocalPredictor | None):
        self.input_names = [BATCH]
        self.output_names = [BATCH]
        self.batch = batch
        self.client = client
        self.predictor = predictor

    def run(self, feed: Mapping[str, Any]) -> list[Any]:
        if self.client is not None:
            self.client.local.predictor = self.predictor
        return [self.batch.run(feed[BATCH])]

    def close(self) -> None:
        if self.predictor is not None:
            self.predictor.runner.close()


class ProcessWorker:
    """One worker of a process op, inside its predictor process: its own user op and model.
    Batches come and go pickled in a uint8 array (the process transport carries arrays)."""

    def __init__(self, batch: OpBatch, predictor: LocalPredictor | None):
        self.input_names = [BATCH]
        self.output_names = [BATCH]
        self.batch = batch
        self.predictor = predictor

    def run(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        items = pickle.loads(feed[BATCH].tobytes())
        return [_pickled(self.batch.run(items))]

    def close(self) -> None:
        if self.predictor is not None:
            self.predictor.runner.close()


def _pickled(value: Any) -> np.ndarray:
    """What a process op's batch travels as. Only these pickles are ever unpickled: made by the
    server or its own predictor process, in shared memory only the two open (0600), never bytes
    a client sent (a request's values are inside as plain str/bytes/arrays)."""
    return np.frombuffer(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8)


def start_process_worker(script: str, name: str, op_conf: Any, device_id: int | None) -> ProcessWorker:
    """Build a process op's worker in its predictor process (the engine's model factory)."""
    from serving.runners.runner_modules import load_one

    service = read_service(script, op_conf.params_model.script_args)
    op = service.ops[name]
    op._fetch_names = op_conf.params_model.fetch_list
    folder, has_model = _model(op_conf)
    predictor = None
    if has_model:
        assert folder is not None
        params = op_conf.params_model
        runner = _loaded(op_conf.local_service_conf, params.engine_fallback, lambda c: load_one(c, device_id))
        predictor = LocalPredictor(runner, folder)
    op.client = predictor
    if predictor is not None and op._fetch_names is None:
        op._fetch_names = predictor.fetch_names_  # Paddle Serving: no fetch_list fetches every output
    op.with_serving = has_model
    op.concurrency_idx = device_id or 0
    op.init_op()
    return ProcessWorker(OpBatch(op, os.getpid()), predictor)


class PaddleServingStage(EngineOp):
    """An op fed by other ops (their :class:`ChannelData`)."""

    Params = StageParams
    needs_model = False

    def __init__(self, ctx: OpContext):
        super().__init__(ctx)
        self.service: Service | None = None

    def load(self) -> None:
        if self.params.thread_op or isinstance(self, PaddleServingFirstStage):
            # a thread op's workers share this Op; a first stage holds the request and response ops.
            # A process op's workers read the script in their own processes.
            self.service = read_service(self.params.script, self.params.script_args)

    def create_runners(self, count: int) -> list[Runner] | None:
        if not self.params.thread_op:
            return None  # predictor processes, built by model_factory
        assert self.service is not None
        from serving.runners.runner_modules import load_in_process

        op = self.service.ops[self.params.op]
        op._fetch_names = self.params.fetch_list
        folder, has_model = _model(self.conf)
        predictors: list[LocalPredictor | None] = [None] * count
        if has_model:
            assert folder is not None
            runners = _loaded(
                self.conf.local_service_conf, self.params.engine_fallback, lambda c: load_in_process(c, count)
            )
            predictors = [LocalPredictor(r, folder) for r in runners]
        client = _ThreadClient(predictors[0]) if has_model and predictors[0] is not None else None
        op.client = client
        if client is not None and op._fetch_names is None:
            op._fetch_names = client.fetch_names_  # Paddle Serving: no fetch_list fetches every output
        op.with_serving = has_model
        op.concurrency_idx = None
        op.init_op()
        batch = OpBatch(op)
        return [ThreadWorker(batch, client, p) for p in predictors]

    def model_factory(self) -> Any:
        if self.params.thread_op:
            return None
        return functools.partial(start_process_worker, self.params.script, self.params.op, self.conf)

    # ---- per request: one item, or none after an error upstream ----
    def expand(self, inputs: Mapping[str, Any]) -> Sequence[Any]:
        datas = list(inputs.values())
        if any(d.datatype == ChannelDataType.ERROR.value for d in datas):
            return []
        first = datas[0]
        return [Item({name: d.parse() for name, d in inputs.items()}, first.id, first.log_id)]

    def merge(self, inputs: Mapping[str, Any], results: list[Any]) -> Any:
        if results:
            return results[0]
        return next(d for d in inputs.values() if d.datatype == ChannelDataType.ERROR.value)

    # ---- per batch: the whole batch to one worker ----
    def collate(self, items: Sequence[Any]) -> list[SubBatch]:
        batch = list(items)
        # a thread worker takes the items as they are; a process worker, pickled
        feed: dict[str, Any] = {BATCH: batch if self.params.thread_op else _pickled(batch)}
        return [SubBatch(indices=list(range(len(batch))), feed=feed)]

    def uncollate(self, sub: SubBatch, outputs: list[Any]) -> list[Any]:
        out = outputs[0]
        return pickle.loads(out.tobytes()) if isinstance(out, np.ndarray) else list(out)

    def agree(self, primary: Any, shadow: Any) -> bool:
        return _channel_agree(primary, shadow)


class PaddleServingFirstStage(PaddleServingStage):
    """An op fed by the request's ``RequestOp``; it numbers the pipeline's requests (Paddle
    Serving's ``data_id``, unique per graph whichever door a request came by)."""

    input_kind = PADDLE_REQUEST

    def __init__(self, ctx: OpContext):
        super().__init__(ctx)
        self._data_ids = itertools.count()
        self._data_id_lock = threading.Lock()

    def next_data_id(self) -> int:
        with self._data_id_lock:
            return next(self._data_ids)

    def expand(self, inputs: Mapping[str, Any]) -> Sequence[Any]:
        value: Unpacked = inputs["input"]
        return [Item({DAG_EXECUTOR: value.data}, value.data_id, value.log_id)]


def _channel_agree(a: ChannelData, b: ChannelData) -> bool:
    from serving.op import values_agree

    if a.datatype != b.datatype or a.error_code != b.error_code:
        return False
    if a.datatype == ChannelDataType.ERROR.value:
        return a.prod_error_code == b.prod_error_code
    return values_agree(a.parse(), b.parse())
