"""The config file's typed form: pydantic models, one module per block. Import from
``serving.config.schema``, not the block modules.
"""

from serving.config.schema.dag_settings import DagConfig, TracerConf
from serving.config.schema.http_settings import HttpConf
from serving.config.schema.local_service import (
    DEVICE_TYPE_NAMES,
    LocalServiceConf,
    TensorRTConf,
    TrtShape,
    device_type_value,
)
from serving.config.schema.op import OP_ALIASES, OpConfig
from serving.config.schema.routing import HEADER_PATTERN, RoutingConf, ShadowConf
from serving.config.schema.security import SecurityConf
from serving.config.schema.serving_config import ServingConfig
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
