"""Precision profiles: a config file plus per-op overrides, nothing else.

A profile names a repo config (or a path), ``local_service_conf`` and
``params`` overrides per op, and optionally ops the bench runs on one
OpenVINO Runtime instance of its own making (``runtime``: fp32, int8 or bf16;
``engine: openvino`` on the op's model, or on the int8 IR the bench quantizes
from it with NNCF), which is how int8 is measured. ``needs`` lists what the
machine must have: CPU capabilities as OpenVINO reports them (``BF16``,
``INT8``) and ``nncf`` for int8 models; a profile whose needs are not met is
reported as unavailable, never measured on a substitute.

On the command line (``--profile``) a profile is written
``name=config[,op.key=value ...]``: ``op.key`` sets ``local_service_conf.key``,
``op.params.key`` sets ``params.key``, ``op.runtime=int8`` runs the op on that
int8 instance, ``needs=BF16`` adds a need; values are YAML. For example
``ov=ocr,det.engine=openvino,rec.engine=openvino``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.lib.script import BenchError

RUNTIME_PRECISIONS = ("fp32", "int8", "bf16")


@dataclass(frozen=True)
class Profile:
    name: str
    config: str  # a repo config name ("ocr") or a YAML path
    ops: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # op -> local_service_conf keys
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # op -> params keys
    runtime: Mapping[str, str] = field(default_factory=dict)  # op -> bench OpenVINO Runtime precision
    needs: tuple[str, ...] = ()
    note: str = ""

    def missing(self, capabilities: set[str], have_nncf: bool) -> list[str]:
        """The needs this machine does not meet (empty: the profile can run)."""
        out = [n for n in self.needs if n != "nncf" and n.upper() not in capabilities]
        if "nncf" in self.needs and not have_nncf:
            out.append("nncf")
        return out


def _bf16(ops: tuple[str, ...], config: str = "ocr") -> Profile:
    return Profile(
        name="bf16-" + "+".join(ops),
        config=config,
        ops={op: {"precision": "bf16"} for op in ops},
        needs=("BF16",),
        note="OpenVINO Runtime (as shipped), precision bf16",
    )


def _int8(ops: tuple[str, ...]) -> Profile:
    return Profile(
        name="int8-" + "+".join(ops),
        config="ocr",
        runtime={op: "int8" for op in ops},
        needs=("INT8", "nncf"),
        note="NNCF post-training int8 on OpenVINO Runtime; other ops as shipped",
    )


PROFILES: tuple[Profile, ...] = (
    Profile("exact", "ocr", note="configs/ocr.yml as shipped: fp32, OpenVINO Runtime (engine: openvino)"),
    Profile(
        "paddle-openvino",
        "ocr",
        ops={op: {"engine": "paddle", "use_openvino": True, "conv_kernels": "auto"} for op in ("det", "rec")},
        note="configs/ocr.yml on Paddle Inference's OpenVINO engine (the engine before issue 14)",
    ),
    Profile("fast", "ocr_fast", note="configs/ocr_fast.yml as shipped: bf16 where the CPU has it, rec bucket"),
    Profile("rec-bucket", "ocr", params={"rec": {"pad_policy": "bucket"}}, note="rec pad_policy: bucket"),
    _bf16(("det",)),
    _bf16(("rec",)),
    _bf16(("det", "rec")),
    Profile(
        "ov-fp32",
        "ocr",
        runtime={"det": "fp32", "rec": "fp32"},
        note="OpenVINO Runtime fp32, the int8 profiles' own baseline",
    ),
    _int8(("det",)),
    _int8(("rec",)),
    _int8(("det", "rec")),
    Profile(
        "int8-det+rec-bucket",
        "ocr",
        params={"rec": {"pad_policy": "bucket"}},
        runtime={"det": "int8"},
        needs=("INT8", "nncf"),
        note="int8 det with rec pad_policy: bucket",
    ),
    Profile("exact-cls", "ocr_cls", note="configs/ocr_cls.yml as shipped: det -> cls -> rec, fp32"),
    _bf16(("det", "cls", "rec"), config="ocr_cls"),
)


def _value(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


def parse_profile(spec: str) -> Profile:
    """``name=config[,op.key=value ...]`` -> :class:`Profile` (see the module docstring)."""
    name, sep, rest = spec.partition("=")
    parts = [p.strip() for p in rest.split(",") if p.strip()]
    if not sep or not name.strip() or not parts:
        raise BenchError(f"profile {spec!r}: expected name=config[,op.key=value ...]")
    ops: dict[str, dict[str, Any]] = {}
    params: dict[str, dict[str, Any]] = {}
    runtime: dict[str, str] = {}
    needs: list[str] = []
    for part in parts[1:]:
        key, eq, value = part.partition("=")
        path = key.strip().split(".")
        if not eq or not value:
            raise BenchError(f"profile {name!r}: {part!r} is not key=value")
        if path == ["needs"]:
            needs.append(value.strip())
        elif len(path) == 2 and path[1] == "runtime":
            if value not in RUNTIME_PRECISIONS:
                raise BenchError(f"profile {name!r}: runtime {value!r}, expected one of {RUNTIME_PRECISIONS}")
            runtime[path[0]] = value
            needs += {"int8": ["INT8", "nncf"], "bf16": ["BF16"]}.get(value, [])
        elif len(path) == 2:
            ops.setdefault(path[0], {})[path[1]] = _value(value)
        elif len(path) == 3 and path[1] == "params":
            params.setdefault(path[0], {})[path[2]] = _value(value)
        else:
            raise BenchError(f"profile {name!r}: {key!r} is not op.key, op.params.key, op.runtime or needs")
    return Profile(name.strip(), parts[0], ops, params, runtime, tuple(dict.fromkeys(needs)), note="--profile")
