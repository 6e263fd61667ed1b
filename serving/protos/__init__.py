"""The gRPC protocols' messages: Paddle Serving's pipeline service and the Open
Inference Protocol (KServe v2), built from the descriptor sets protoc wrote next to
their ``.proto`` files (``python -m serving.protos.generate`` rewrites them).

The message classes live in a descriptor pool of their own, not protobuf's default
one: a process that also imports tritonclient's or Paddle Serving's own generated
modules (a test, a user's gateway) defines the same full names there, and one pool
refuses a name twice. Without generated Python code, the messages also work with
any protobuf runtime from 4.21 on (no generated-code version check).

The bundled client imports this package too (its only import of ``serving``)."""

from __future__ import annotations

import functools
import os
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

HERE = os.path.dirname(os.path.abspath(__file__))

PIPELINE = "paddle_serving_pipeline"  # package baidu.paddle_serving.pipeline_serving
INFERENCE = "open_inference"  # package inference
MODEL_CONFIG = "paddle_serving_model_config"  # package baidu.paddle_serving.configure
PROTOS = (PIPELINE, INFERENCE, MODEL_CONFIG)

PIPELINE_PACKAGE = "baidu.paddle_serving.pipeline_serving"
INFERENCE_PACKAGE = "inference"
MODEL_CONFIG_PACKAGE = "baidu.paddle_serving.configure"


def descriptor_set_path(proto: str) -> str:
    return os.path.join(HERE, proto + ".binpb")


@functools.cache
def _pool(proto: str) -> descriptor_pool.DescriptorPool:
    files = descriptor_pb2.FileDescriptorSet()
    with open(descriptor_set_path(proto), "rb") as f:
        files.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    return pool


def message(proto: str, full_name: str) -> Any:
    """The message class ``full_name`` (e.g. ``"inference.ModelInferRequest"``) of ``proto``."""
    return message_factory.GetMessageClass(_pool(proto).FindMessageTypeByName(full_name))


class Messages:
    """Attribute access to one package's messages: ``Messages(INFERENCE, "inference").ModelInferRequest``."""

    def __init__(self, proto: str, package: str):
        self._proto = proto
        self._package = package

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        cls = message(self._proto, f"{self._package}.{name}")
        setattr(self, name, cls)
        return cls


def pipeline_messages() -> Messages:
    """Paddle Serving's ``Request``, ``Response`` and ``Tensor``."""
    return Messages(PIPELINE, PIPELINE_PACKAGE)


def model_config_messages() -> Messages:
    """Paddle Serving's serving model folder config: ``GeneralModelConfig``, ``FeedVar``, ``FetchVar``."""
    return Messages(MODEL_CONFIG, MODEL_CONFIG_PACKAGE)


def inference_messages() -> Messages:
    """The Open Inference Protocol's messages (``ModelInferRequest``, ...)."""
    return Messages(INFERENCE, INFERENCE_PACKAGE)
