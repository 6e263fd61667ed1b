"""``ray.direct_ingress``: off by default, typed, and the ingress replicas' own ports
read from Ray's target groups (the proxy's port and gRPC groups left out)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from serving.config.ray_schema import RayConf
from serving.rayserve.direct_ingress import ENV, replica_ports


def group(protocol: str, *ports: int) -> SimpleNamespace:
    return SimpleNamespace(protocol=SimpleNamespace(value=protocol), targets=[SimpleNamespace(port=p) for p in ports])


def test_off_by_default_and_a_bool():
    assert RayConf().direct_ingress is False
    assert RayConf.model_validate({"direct_ingress": True}).direct_ingress is True
    with pytest.raises(ValidationError):
        RayConf.model_validate({"direct_ingress": "yes"})


def test_replica_ports_leave_out_the_proxy_and_grpc():
    groups = [group("HTTP", 30001, 30000, 8000), group("gRPC", 40000), group("HTTP", 30000)]
    assert replica_ports(groups, proxy_port=8000) == [30000, 30001]
    assert replica_ports([group("HTTP", 8000)], proxy_port=8000) == []  # no replica up yet: only the proxy


def test_the_environment_turns_it_on_without_the_30_s_minimum_drain():
    assert ENV == {"RAY_SERVE_ENABLE_DIRECT_INGRESS": "1", "RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S": "0"}
