"""Config layer: config.yml -> validated objects (load.py); files served together -> a repository (file_set.py)."""

from serving.config.errors import ConfigError
from serving.config.file_set import (
    RepositoryConfig,
    Route,
    SharedOp,
    expand_sources,
    load_repository,
    op_fingerprint,
    pipeline_fingerprint,
    repository_of,
)
from serving.config.load import load_config, parse_config
from serving.config.schema import (
    DagConfig,
    LocalServiceConf,
    OpConfig,
    RoutingConf,
    ServingConfig,
    ShadowConf,
    TensorRTConf,
)

__all__ = [
    "ConfigError",
    "DagConfig",
    "LocalServiceConf",
    "OpConfig",
    "RepositoryConfig",
    "Route",
    "RoutingConf",
    "ServingConfig",
    "ShadowConf",
    "SharedOp",
    "TensorRTConf",
    "expand_sources",
    "load_config",
    "load_repository",
    "op_fingerprint",
    "parse_config",
    "pipeline_fingerprint",
    "repository_of",
]
