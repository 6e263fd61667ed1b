"""Paddle Serving 0.9's ``Op``, ``RequestOp`` and ``ResponseOp`` as a user's ``web_service.py``
subclasses them: the constructor keywords, the hooks with their exact arguments and return
tuples, and the defaults (``process`` runs the op's model). How the hooks run for a batch of
requests is :mod:`serving.paddle_serving.op_batch`; where they run, :mod:`serving.paddle_serving.stage`."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from io import BytesIO
from typing import Any

import numpy as np

from serving.paddle_serving.channel import ChannelData, ChannelDataErrcode, ChannelDataType
from serving.protos import pipeline_messages

log = logging.getLogger(__name__)

#: the name Paddle Serving gives the request and response ops (input_dicts' key for a first op)
DAG_EXECUTOR = "@DAGExecutor"

# Tensor.elem_type -> numpy dtype and the field that carries it (Paddle Serving's table)
_TENSOR_TYPES = {
    0: ("int64", "int64_data"),
    1: ("float32", "float_data"),
    2: ("int32", "int_data"),
    3: ("float64", "float64_data"),
    4: ("int16", "int_data"),
    5: ("float16", "float_data"),
    6: ("uint16", "uint32_data"),
    7: ("uint8", "uint32_data"),
    8: ("int8", "int_data"),
    9: ("bool", "bool_data"),
}
_BYTES, _STRING = 13, 12
NPY_ONLY = "np.save bytes of an array without objects: nothing is unpickled here"
#: the elem_types Paddle Serving knows (complex64 and complex128, 10 and 11, it knows but cannot read)
_ELEM_TYPES = range(14)


class OpError(RuntimeError):
    """A hook broke Paddle Serving's contract (a wrong return type, several inputs to a default preprocess)."""


class Op:
    """A pipeline op. Override ``init_op``, ``preprocess``, ``process``, ``postprocess``."""

    def __init__(
        self,
        name: str | None = None,
        input_ops: Sequence[Op] = (),
        server_endpoints: Any = None,
        fetch_list: list[str] | None = None,
        client_config: Any = None,
        client_type: str | None = None,
        concurrency: int | None = None,
        timeout: int | None = None,
        retry: int = 0,
        batch_size: int | None = None,
        auto_batching_timeout: int | None = None,
        local_service_handler: Any = None,
        jump_to_ops: Sequence[Op] = (),
    ):
        self.name = name
        self.concurrency = concurrency
        self._server_endpoints = server_endpoints
        self._fetch_names = fetch_list
        self._client_config = client_config
        self.client_type = client_type
        self._timeout = timeout
        self._retry = max(1, retry)
        self._batch_size = batch_size
        self._auto_batching_timeout = auto_batching_timeout
        self._local_service_handler = local_service_handler
        self._input_ops: list[Op] = []
        self.set_input_ops(input_ops)
        self._jump_to_ops = list(jump_to_ops)
        self.with_serving = False  # set when the op's model is loaded
        self.client: Any = None  # the op's model (a LocalPredictor), set before init_op
        self.concurrency_idx: int | None = None
        self.dynamic_shape_info: dict = {}
        self.set_dynamic_shape_info()

    def set_dynamic_shape_info(self) -> None:
        """Set ``self.dynamic_shape_info`` (``min_input_shape``, ``max_input_shape``, ``opt_input_shape``): with
        ``device_type: 2`` the op's ``tensorrt.dynamic_shape``, as Paddle Serving hands it to Paddle-TensorRT."""

    def init_op(self) -> None:
        """Called once per worker before it serves (per process for process ops, once for thread ops)."""

    def get_input_ops(self) -> list[Op]:
        return self._input_ops

    def set_input_ops(self, ops: Any) -> None:
        if not isinstance(ops, (list, tuple)):
            ops = [ops]
        for op in ops:
            if not isinstance(op, Op):
                raise TypeError(f"input_ops of op {self.name!r} must be Ops, got {type(op).__name__}")
        self._input_ops = list(ops)

    def get_jump_to_ops(self) -> list[Op]:
        return self._jump_to_ops

    def preprocess(self, input_dicts: dict, data_id: int = 0, log_id: Any = 0) -> tuple[Any, bool, Any, str]:
        """``(feed dict or [feed dict, ...], is_skip_process, prod_errcode, prod_errinfo)``; by
        default the one input op's dict, unchanged."""
        if len(input_dicts) != 1:
            raise OpError(f"op {self.name!r} has {len(input_dicts)} input ops: override preprocess to combine them")
        ((_, input_dict),) = input_dicts.items()
        return input_dict, False, None, ""

    def process(self, feed_batch: list[dict], typical_logid: Any = 0) -> tuple[Any, int, str]:
        """``(fetch dict, err_code, err_info)``: the op's model on ``feed_batch[0]`` (Paddle Serving
        merges a batch's feeds into one dict before this), once the feed's names are the model's
        and the fetch names among its outputs."""
        if self.client is None:
            return None, ChannelDataErrcode.NOT_IMPLEMENTED.value, f"op {self.name!r} has no model"
        if not (
            _feeds_match(feed_batch[0], self.client.feed_names_)
            and _fetches_match(self._fetch_names, self.client.fetch_names_)
        ):
            return (
                None,
                ChannelDataErrcode.INPUT_PARAMS_ERROR.value,
                f"Log_id: {typical_logid}  Raise_msg:  invalid arg list  ClassName: "
                "Op.process.<locals>.feed_fetch_list_check_helper  FunctionName: feed_fetch_list_check_helper",
            )
        result = self.client.predict(feed=feed_batch[0], fetch=self._fetch_names, batch=True, log_id=typical_logid)
        return result, ChannelDataErrcode.OK.value, ""

    def postprocess(
        self, input_data: dict, fetch_data: Any, data_id: int = 0, log_id: Any = 0
    ) -> tuple[dict, Any, str]:
        """``(out_dict, prod_errcode, prod_errinfo)``; by default the fetch dict."""
        return (fetch_data if isinstance(fetch_data, dict) else {}), None, ""

    def _log(self, info: str) -> str:
        return f"{self.name} {info}"


def _feeds_match(feed: Any, names: list[str]) -> bool:
    """Paddle Serving's check: the feed's keys (``.lod`` ones aside) are the model's feed names."""
    if not isinstance(feed, dict):
        return False
    keys = [k for k in feed if "lod" not in k]
    return len(keys) == len(names) and all(name in keys for name in names)


def _fetches_match(fetch: Any, names: list[str]) -> bool:
    if fetch is not None and len(fetch) == 0:
        return True
    return isinstance(fetch, list) and all(name in names for name in fetch)


def tensor_to_numpy(tensor: Any) -> tuple[Any, Any]:
    """A request Tensor -> (array, lod or None), as Paddle Serving's ``proto_tensor_2_numpy``
    (an empty shape is a 0-d array). ``np.save`` bytes are loaded without unpickling (Paddle
    Serving unpickles them): an object array, or bytes that are not ``.npy``, fail the request."""
    lod = np.array(tensor.lod).astype(np.int32).reshape(2, -1) if len(tensor.lod) > 0 else None
    if tensor.elem_type == _BYTES:
        try:
            return np.load(BytesIO(tensor.byte_data), allow_pickle=False), lod
        except (ValueError, EOFError, MemoryError):  # MemoryError: a header naming more than the bytes hold
            why = f"the byte_data of tensor {tensor.name} is not a whole .npy array ({NPY_ONLY})"
            raise ValueError(why) from None
    if tensor.elem_type not in _TENSOR_TYPES:
        raise ValueError(f"Sorry, the type {tensor.elem_type} of tensor {tensor.name} is not supported.")
    dtype, field = _TENSOR_TYPES[tensor.elem_type]
    return np.array(getattr(tensor, field)).astype(dtype).reshape(list(tensor.shape)), lod


class RequestOp(Op):
    """Unpacks a request: ``unpack_request_package(request)`` -> ``(dict, log_id, prod_errcode, prod_errinfo)``."""

    def __init__(self) -> None:
        super().__init__(name=DAG_EXECUTOR, input_ops=[])
        self.init_op()

    def unpack_request_package(self, request: Any) -> tuple[dict, Any, Any, str]:
        if request is None:
            raise ValueError("request is None")
        dict_data: dict[str, Any] = {}
        for idx, key in enumerate(request.key):  # more keys than values: IndexError, as in Paddle Serving
            dict_data[key] = request.value[idx]
        for tensor in request.tensors:
            if tensor.elem_type not in _ELEM_TYPES:
                raise ValueError(f"elem_type:{tensor.elem_type} error")
            if tensor.elem_type == _STRING:
                dict_data[tensor.name] = "".join(tensor.str_data)
                continue
            array, lod = tensor_to_numpy(tensor)
            dict_data[tensor.name] = array
            if lod is not None:
                dict_data[tensor.name + ".lod"] = lod
        return dict_data, request.logid, None, ""


class ResponseOp(Op):
    """Packs the last op's :class:`ChannelData` into a ``Response`` (``pack_response_package``)."""

    def __init__(self, input_ops: Sequence[Op]):
        super().__init__(name=DAG_EXECUTOR, input_ops=input_ops)
        self.init_op()
        self.is_pack_tensor = False

    def set_pack_format(self, isTensor: bool = False) -> None:  # noqa: N803 - Paddle Serving's keyword
        self.is_pack_tensor = isTensor

    def pack_response_package(self, channeldata: ChannelData) -> Any:
        resp = pipeline_messages().Response()
        error_code = channeldata.error_code
        error_info = ""
        if error_code in (None, ChannelDataErrcode.OK.value):
            feed = channeldata.parse()
            if channeldata.datatype == ChannelDataType.CHANNEL_NPDATA.value:
                with np.printoptions(threshold=np.iinfo(np.int64).max):
                    for name, var in feed.items():
                        resp.value.append(repr(var))
                        resp.key.append(name)
            else:
                for name, var in feed.items():
                    if not isinstance(var, str):
                        error_code = ChannelDataErrcode.TYPE_ERROR.value
                        error_info = self._log(f"fetch var type must be str({type(var)}).")
                        break
                    resp.value.append(var)
                    resp.key.append(name)
        else:
            error_info = channeldata.error_info or ""
            if error_code == ChannelDataErrcode.PRODUCT_ERROR.value:
                error_code = channeldata.prod_error_code
                error_info = channeldata.prod_error_info or ""
        resp.err_no = error_code or 0
        resp.err_msg = error_info
        return resp
