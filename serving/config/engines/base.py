"""What an engine states on the config side. It reads a ``local_service_conf`` through a
protocol (:class:`EngineSettings`): the schema imports the engine table, not the reverse.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from serving.config.errors import FieldProblem


class EngineSettings(Protocol):
    """The ``local_service_conf`` keys engines read (read-only: an engine never changes them)."""

    @property
    def device_type(self) -> int: ...
    @property
    def devices(self) -> str: ...
    @property
    def use_openvino(self) -> bool: ...
    @property
    def use_mkldnn(self) -> bool: ...
    @property
    def mkldnn_cache_capacity(self) -> int: ...
    @property
    def precision(self) -> str: ...
    @property
    def cuda_graphs(self) -> bool: ...
    @property
    def torch_compile(self) -> bool: ...
    @property
    def mask_padding(self) -> bool: ...
    @property
    def torch_compile_budget_s(self) -> float: ...


def any_size(max_batch_size: int) -> list[int]:
    """[]: any batch size (for engines whose first run of a new size costs little)."""
    return []


def never_pins(conf: EngineSettings) -> bool:
    return False


def once(conf: EngineSettings) -> int:
    return 1


@dataclass(frozen=True)
class Engine:
    """One engine: what the config layer, the CPU plan and the tuner need to know about it.

    ``precisions``: device_type -> the precisions offered there (finer refusals are
    ``check``'s). ``own_keys``: keys only this engine reads -> the default every other
    engine requires. ``loader``: the runner module's import path, not an import, since
    the config layer sits below the runners (:mod:`serving.runners.runner_modules`).
    """

    name: str
    runtime: str
    summary: str
    precisions: Mapping[int, tuple[str, ...]]
    threads_overlap: bool
    loader: str
    model_files: Callable[[str], Sequence[str]]
    check: Callable[[EngineSettings], None]
    device_label: Callable[[EngineSettings], str]
    own_keys: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    default_run_sizes: Callable[[int], list[int]] = any_size
    pins_cores: Callable[[EngineSettings], bool] = never_pins
    # how many times warm-up runs each shape: twice where the second run prepares it (a CUDA graph capture)
    warmup_runs: Callable[[EngineSettings], int] = once

    @property
    def setting_phrase(self) -> str:
        """``"an OpenVINO Runtime setting"``: how a refusal names one of its ``own_keys``."""
        article = "an" if self.runtime[:1].upper() in "AEIOU" else "a"
        return f"{article} {self.runtime} setting"


def refuse_onednn_keys(conf: EngineSettings, engine: str) -> None:
    """Paddle Inference's oneDNN switches mean nothing to another engine: refused by name."""
    if conf.use_mkldnn or conf.mkldnn_cache_capacity:
        key = "use_mkldnn" if conf.use_mkldnn else "mkldnn_cache_capacity"
        raise FieldProblem(key, f"is a Paddle Inference (oneDNN) setting; with engine: {engine} drop it")


def gpu_label(conf: EngineSettings) -> str:
    """``"gpu"``, ``"gpu:0,1"`` or ``"gpu:0+trt"``: the ``device`` column of a GPU op."""
    label = "gpu" + (f":{conf.devices}" if conf.devices else "")
    return label + ("+trt" if conf.device_type == 2 else "")


def powers_of_two(max_batch_size: int) -> list[int]:
    """1, 2, 4, ... up to ``max_batch_size``, and ``max_batch_size`` itself."""
    sizes = {1 << k for k in range(max_batch_size.bit_length()) if 1 << k <= max_batch_size}
    return sorted(sizes | {max_batch_size})
