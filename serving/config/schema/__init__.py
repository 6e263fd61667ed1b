"""The config file's typed form: pydantic models for the whole file and each of
its blocks, one module per block. Field validators phrase their own problems;
:mod:`serving.config.errors` turns them into ``file: key: message``.

=====================================  ==============================================
block                                  module
=====================================  ==============================================
top level (``ServingConfig``)          :mod:`~serving.config.schema.serving_config`
``op.<name>``                          :mod:`~serving.config.schema.op`
``op.<name>.local_service_conf``       :mod:`~serving.config.schema.local_service`
``...local_service_conf.tensorrt``     :mod:`~serving.config.schema.tensorrt`
``dag``, ``dag.tracer``                :mod:`~serving.config.schema.dag_settings`
``http``                               :mod:`~serving.config.schema.http_settings`
``security``                           :mod:`~serving.config.schema.security`
``routing``, ``routing.shadow``        :mod:`~serving.config.schema.routing`
``ray``, ``op.<name>.ray``             :mod:`serving.config.ray_schema`
=====================================  ==============================================

:mod:`~serving.config.schema.value_checks` holds the value rules several blocks
share. Every name is importable from here, as before the split: import from
``serving.config.schema``, not from the block modules.
"""

from serving.config.schema.dag_settings import DagConfig, TracerConf
from serving.config.schema.http_settings import HttpConf
from serving.config.schema.local_service import DEVICE_TYPE_NAMES, LocalServiceConf, device_type_value
from serving.config.schema.op import OP_ALIASES, OpConfig
from serving.config.schema.routing import HEADER_PATTERN, RoutingConf, ShadowConf
from serving.config.schema.security import SecurityConf
from serving.config.schema.serving_config import ServingConfig
from serving.config.schema.tensorrt import TensorRTConf, TrtShape
from serving.config.schema.value_checks import NAME_PATTERN, is_int, is_number

__all__ = [
    "DEVICE_TYPE_NAMES",
    "HEADER_PATTERN",
    "NAME_PATTERN",
    "OP_ALIASES",
    "DagConfig",
    "HttpConf",
    "LocalServiceConf",
    "OpConfig",
    "RoutingConf",
    "SecurityConf",
    "ServingConfig",
    "ShadowConf",
    "TensorRTConf",
    "TracerConf",
    "TrtShape",
    "device_type_value",
    "is_int",
    "is_number",
]
