"""Real ops of a shipped config, loaded in this process with some keys changed:
how the engine tests run one op (or a det -> rec chain) on each engine."""

from __future__ import annotations

import os
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def loaded_ops(
    config_name: str, overrides: dict[str, dict], hosts: Any = None, params: dict[str, dict] | None = None
) -> dict:
    """``{op: (op, runner)}`` for the ops of ``configs/<config_name>`` named in
    ``overrides``, each with its ``local_service_conf`` updated by them and its ``params`` by
    ``params``'s entry (one instance each; ``device_process`` ones in ``hosts``, a
    :class:`~serving.runners.device_hosts.DeviceHosts`); a key set to None is dropped."""
    from serving.batching.launch import make_op, runners_for
    from serving.config import parse_config
    from serving.config.load import read_config

    path = os.path.join(ROOT, "configs", config_name)
    _, data = read_config(path)
    for name, keys in overrides.items():
        settle(data["op"][name]["local_service_conf"], keys)
    for name, keys in (params or {}).items():
        settle(data["op"][name].setdefault("params", {}), keys)
    config = parse_config(data, path, path=path)
    loaded = {}
    for name in overrides:
        op = make_op(config.op[name])
        op.load()
        loaded[name] = (op, runners_for(op, 1, hosts=hosts)[0])
    return loaded


def settle(block: dict, keys: dict) -> None:
    for key, value in keys.items():
        if value is None:
            block.pop(key, None)
        else:
            block[key] = value
