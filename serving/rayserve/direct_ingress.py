"""Ray Serve's direct ingress (``ray.direct_ingress``; docs/DESIGN_NOTES.md, "Past the proxy").
Ray reads its variables at import, so only a cluster this command starts can be given them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

ENV = {
    "RAY_SERVE_ENABLE_DIRECT_INGRESS": "1",
    # Ray holds a stopping ingress replica open this long for load balancers; none in front here
    "RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S": "0",
}


def node_env() -> str:
    """The variables every node of a cluster must be started with, as a shell would set them."""
    return " ".join(f"{k}={v}" for k, v in ENV.items())


def replica_ports(target_groups: Iterable[Any], proxy_port: int) -> list[int]:
    """The HTTP ports the ingress replicas answer on, from Ray's target groups of one
    application (targets on ``proxy_port``: the proxy, while no replica runs)."""
    ports = {
        target.port
        for group in target_groups
        if str(getattr(group.protocol, "value", group.protocol)).upper() == "HTTP"
        for target in group.targets
        if target.port != proxy_port
    }
    return sorted(ports)


def target_groups(app: str) -> list[Any]:
    """Ray's target groups of ``app``, from Serve's controller (no public API reports them in 2.60)."""
    import ray
    from ray.serve.context import _get_global_client

    client = _get_global_client()
    if client is None:
        raise RuntimeError("Ray Serve is not running")
    return list(ray.get(client._controller.get_target_groups.remote(app), timeout=10))
