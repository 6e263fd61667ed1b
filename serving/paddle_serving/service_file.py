"""Read a user's ``web_service.py``: run it as Paddle Serving would, with
``paddle_serving_server`` and ``paddle_serving_app`` resolving to this layer, in its own folder
(its helpers import, its relative paths resolve), until ``run_service()``/``run_server()``
describes the service. Then walk the graph back from the response op, as Paddle Serving does."""

from __future__ import annotations

import collections
import contextlib
import os
import runpy
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import yaml

from serving.paddle_serving.numpy_compat import give_back_numpy_1_spellings
from serving.paddle_serving.operator import Op, RequestOp, ResponseOp
from serving.paddle_serving.web_service import READING, Described, ServiceDescription

#: the folder whose ``paddle_serving_server`` / ``paddle_serving_app`` are this layer's
SHIM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim")


class ServiceFileError(ValueError):
    """A script that does not describe a service batchline can serve (the message says why)."""


@dataclass
class Service:
    script: str  # absolute path
    name: str | None
    request_op: RequestOp
    response_op: ResponseOp
    ops: dict[str, Op]  # in the order they run (topological)
    inputs: dict[str, list[str]]  # op -> its input ops' names (the request op: DAG_EXECUTOR)
    config: dict = field(default_factory=dict)  # the config.yml it prepared, as read
    config_file: str = ""  # where (the script itself for a yml_dict)
    args: tuple[str, ...] = ()  # its command line (what ``python script ...`` would have been given)

    @property
    def folder(self) -> str:
        return os.path.dirname(self.script)

    @property
    def last_op(self) -> str:
        return self.response_op.get_input_ops()[0].name  # type: ignore[return-value]


def enter_folder(script: str) -> None:
    """Make ``script``'s imports and relative paths resolve as when it runs in its folder:
    its folder and the shims first on ``sys.path``, and the working directory there."""
    folder = os.path.dirname(os.path.abspath(script))
    for path in (folder, SHIM_DIR):
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)
    os.chdir(folder)


@contextlib.contextmanager
def _reading() -> Iterator[None]:
    token = READING.set(True)
    try:
        yield
    finally:
        READING.reset(token)


@contextlib.contextmanager
def _argv(script: str, args: Sequence[str]) -> Iterator[None]:
    """``sys.argv`` as ``python script args...`` gives it, while the script's top level runs (scripts
    parse their own options there: ``-c config.yml``, ``--model_dir``)."""
    saved = sys.argv
    sys.argv = [script, *args]
    try:
        yield
    finally:
        sys.argv = saved


def describe(script: str, args: Sequence[str] = ()) -> ServiceDescription:
    """Run ``script`` (with ``args`` as its command line) until it describes its service."""
    script = os.path.abspath(script)
    if not os.path.isfile(script):
        raise ServiceFileError(f"{script}: no such file")
    enter_folder(script)
    give_back_numpy_1_spellings()
    with _reading(), _argv(script, args):
        try:
            runpy.run_path(script, run_name="__main__")
        except Described as described:
            return described.description
        except SystemExit as exc:
            raise ServiceFileError(f"{script}: exited ({exc.code}) before it started its service") from None
        except Exception as exc:
            raise ServiceFileError(f"{script}: {type(exc).__name__}: {exc}") from exc
    raise ServiceFileError(f"{script}: never called run_service() (WebService) or run_server() (PipelineServer)")


def _graph(description: ServiceDescription, script: str) -> tuple[RequestOp, dict[str, Op], dict[str, list[str]]]:
    inputs_of_response = description.response_op.get_input_ops()
    if len(inputs_of_response) != 1:
        raise ServiceFileError(f"{script}: the ResponseOp must have one input op, it has {len(inputs_of_response)}")
    found: dict[int, Op] = {}
    queue = collections.deque(inputs_of_response)  # breadth first: an op's inputs in their order
    while queue:
        op = queue.popleft()
        if id(op) not in found:
            found[id(op)] = op
            queue.extend(op.get_input_ops())
    request_ops = [op for op in found.values() if isinstance(op, RequestOp)]
    if len(request_ops) != 1:
        raise ServiceFileError(f"{script}: the graph must start at one RequestOp, it has {len(request_ops)}")
    ops = [op for op in found.values() if not isinstance(op, (RequestOp, ResponseOp))]
    names: dict[str, Op] = {}
    for op in ops:
        if not op.name:
            raise ServiceFileError(f"{script}: an op of class {type(op).__name__} has no name (Op(name=...))")
        if op.name in names:
            raise ServiceFileError(f"{script}: two ops are named {op.name!r}")
        names[op.name] = op
    inputs = {op.name: [i.name for i in op.get_input_ops()] for op in ops}
    order: list[str] = []
    while len(order) < len(ops):  # Kahn's order, stable in the order ops were found
        ready = [n for n in names if n not in order and all(i in order or i not in names for i in inputs[n])]
        if not ready:
            raise ServiceFileError(f"{script}: the ops form a cycle")
        order.extend(sorted(ready, key=lambda n: list(names).index(n)))
    return request_ops[0], {n: names[n] for n in order}, cast(dict[str, list[str]], inputs)


def _config_file(description: ServiceDescription, script: str) -> str:
    if description.yml_dict is not None:
        return script
    return os.path.join(os.path.dirname(script), str(description.yml_file))


def _config(description: ServiceDescription, script: str) -> dict:
    if description.yml_dict is not None:
        return dict(description.yml_dict)
    path = _config_file(description, script)
    try:
        with open(path, encoding="utf-8") as f:
            data: Any = yaml.safe_load(f)
    except OSError as exc:
        raise ServiceFileError(f"{script}: cannot read its config {description.yml_file!r}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ServiceFileError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ServiceFileError(f"{path}: must be a mapping")
    return data


def read_service(script: str, args: Sequence[str] = ()) -> Service:
    """The service ``script`` describes (run with ``args`` as its command line): its ops, their graph
    and its config."""
    script = os.path.abspath(script)
    description = describe(script, args)
    request_op, ops, inputs = _graph(description, script)
    return Service(
        script,
        description.name,
        request_op,
        description.response_op,
        ops,
        inputs,
        _config(description, script),
        _config_file(description, script),
        tuple(args),
    )
