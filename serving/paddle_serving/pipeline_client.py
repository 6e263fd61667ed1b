"""Paddle Serving 0.9's ``PipelineClient`` (gRPC, ``PipelineService.inference``): what its
``pipeline_rpc_client.py`` examples import. It packs a request as Paddle Serving's does."""

from __future__ import annotations

import functools
import socket
from io import BytesIO
from typing import Any

import grpc
import numpy as np

from serving.protos import PIPELINE_PACKAGE, pipeline_messages

PROFILE_KEY, PROFILE_VALUE = "pipeline.profile", "1"
_DTYPES = {
    "int64": ("int64_data", 0),
    "float32": ("float_data", 1),
    "int32": ("int_data", 2),
    "float64": ("float64_data", 3),
    "int16": ("int_data", 4),
    "float16": ("float_data", 5),
    "uint16": ("uint32_data", 6),
    "uint8": ("uint32_data", 7),
    "int8": ("int_data", 8),
    "bool": ("bool_data", 9),
}
_MAX_MESSAGE = 512 * 1024 * 1024


def _full_repr(value: np.ndarray) -> str:
    with np.printoptions(threshold=np.iinfo(np.int64).max):
        return repr(value)


class PipelineClient:
    def __init__(self) -> None:
        self._messages = pipeline_messages()
        self._channel: grpc.Channel | None = None
        self._call: Any = None

    def connect(self, endpoints: list[str]) -> None:
        options = [
            ("grpc.max_receive_message_length", _MAX_MESSAGE),
            ("grpc.max_send_message_length", _MAX_MESSAGE),
            ("grpc.lb_policy_name", "round_robin"),
        ]
        self._channel = grpc.insecure_channel("ipv4:" + ",".join(endpoints), options=options)
        self._call = self._channel.unary_unary(
            f"/{PIPELINE_PACKAGE}.PipelineService/inference",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=self._messages.Response.FromString,
        )

    def _pack(self, feed_dict: dict, pack_tensor_format: bool, use_tensor_bytes: bool, profile: bool) -> Any:
        req = self._messages.Request()
        feed = dict(feed_dict)
        logid = feed.pop("logid", None)
        req.logid = 0 if logid is None else int(logid)
        clientip = feed.pop("clientip", None)
        if clientip is None:
            try:
                clientip = socket.gethostbyname(socket.gethostname())
            except OSError:
                clientip = "127.0.0.1"
        req.clientip = clientip
        if not pack_tensor_format:
            for key, value in feed.items():
                req.key.append(key)
                if isinstance(value, str):
                    req.value.append(value)
                elif isinstance(value, np.ndarray):
                    req.value.append(_full_repr(value))
                elif isinstance(value, list):
                    req.value.append(_full_repr(np.array(value)))
                else:
                    raise TypeError(f"only str and np.ndarray type is supported: {type(value)}")
            if profile:
                req.key.append(PROFILE_KEY)
                req.value.append(PROFILE_VALUE)
            return req
        for key, value in feed.items():
            if ".lod" in key:
                continue
            tensor = req.tensors.add()
            tensor.name = key
            if isinstance(value, str):
                tensor.str_data.append(value)
                tensor.elem_type = 12
                continue
            if not isinstance(value, np.ndarray):
                raise TypeError(f"only str and np.ndarray type is supported: {type(value)}")
            tensor.shape.extend(value.shape)
            lod = feed.get(key + ".lod")
            if lod is not None:
                tensor.lod.extend(lod)
            if use_tensor_bytes:
                buffer = BytesIO()
                np.save(buffer, value, allow_pickle=False)
                tensor.byte_data = buffer.getvalue()
                tensor.elem_type = 13
                continue
            field, elem_type = _DTYPES.get(str(value.dtype), (None, None))
            if field is None:
                raise TypeError(f"value type {value.dtype} of tensor {key} is not supported.")
            getattr(tensor, field).extend(value.flatten().tolist())
            tensor.elem_type = elem_type
        return req

    def predict(
        self,
        feed_dict: dict,
        fetch: list[str] | None = None,
        asyn: bool = False,
        pack_tensor_format: bool = False,
        use_tensor_bytes: bool = False,
        profile: bool = False,
        log_id: int = 0,
    ) -> Any:
        if not isinstance(feed_dict, dict):
            raise TypeError("feed must be dict type with format: {name: value}.")
        if fetch is not None and not isinstance(fetch, list):
            raise TypeError("fetch must be list type with format: [name].")
        if self._call is None:
            raise RuntimeError("connect() first")
        req = self._pack(feed_dict, pack_tensor_format, use_tensor_bytes, profile)
        req.logid = log_id
        if not asyn:
            return self._call(req)
        return PipelinePredictFuture(self._call.future(req), functools.partial(_unpack, fetch=fetch))


def _unpack(resp: Any, fetch: list[str] | None) -> Any:
    return resp


class PipelinePredictFuture:
    def __init__(self, call_future: Any, callback_func: Any):
        self.call_future_ = call_future
        self.callback_func_ = callback_func

    def result(self) -> Any:
        return self.callback_func_(self.call_future_.result())
