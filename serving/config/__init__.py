"""Config layer: config.yml -> typed, validated objects (see load.py)."""

from serving.config.errors import ConfigError
from serving.config.load import load_config, parse_config
from serving.config.schema import DagConfig, LocalServiceConf, OpConfig, ServingConfig, TensorRTConf

__all__ = [
    "ConfigError",
    "DagConfig",
    "LocalServiceConf",
    "OpConfig",
    "ServingConfig",
    "TensorRTConf",
    "load_config",
    "parse_config",
]
