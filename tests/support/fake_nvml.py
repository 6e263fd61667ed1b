"""A stand-in for ``pynvml`` (the part :mod:`serving.runners.gpus` calls), so the
GPU metrics are tested on machines without a GPU or nvidia-ml-py.

    nvml = FakeNvml([FakeGpu("NVIDIA H200", utilization=37, used=2 << 30, total=141 << 30)])
    LiveApp(config, nvml=nvml)

``fail`` makes named calls of one GPU raise :class:`NVMLError`, as a GPU that
fell off the bus does; ``init_error`` makes ``nvmlInit`` raise, as on a machine
with the library but no driver."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace


class NVMLError(Exception):
    """pynvml's base error class (the real one carries an NVML return code)."""


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    utilization: int = 0  # percent, as NVML reports it
    used: int = 0  # bytes
    total: int = 141 << 30
    uuid: str = ""
    fail: set[str] = field(default_factory=set)  # NVML calls that raise for this GPU


class FakeNvml:
    NVMLError = NVMLError

    def __init__(self, gpus: list[FakeGpu], *, init_error: str | None = None, names_as_bytes: bool = False):
        self.gpus = gpus
        self.init_error = init_error
        self.names_as_bytes = names_as_bytes  # pynvml before nvidia-ml-py 11.515 returned bytes
        self.calls: list[str] = []

    def _gpu(self, call: str, handle: int) -> FakeGpu:
        self.calls.append(call)
        gpu = self.gpus[handle]
        if call in gpu.fail:
            raise NVMLError(f"{call}: GPU is lost")
        return gpu

    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        if self.init_error is not None:
            raise NVMLError(self.init_error)

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._gpu("nvmlDeviceGetHandleByIndex", index)
        return index

    def nvmlDeviceGetName(self, handle: int) -> str | bytes:
        name = self._gpu("nvmlDeviceGetName", handle).name
        return name.encode() if self.names_as_bytes else name

    def nvmlDeviceGetUUID(self, handle: int) -> str | bytes:
        uuid = self._gpu("nvmlDeviceGetUUID", handle).uuid or f"GPU-00000000-0000-0000-0000-00000000000{handle}"
        return uuid.encode() if self.names_as_bytes else uuid

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> SimpleNamespace:
        gpu = self._gpu("nvmlDeviceGetUtilizationRates", handle)
        return SimpleNamespace(gpu=gpu.utilization, memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        gpu = self._gpu("nvmlDeviceGetMemoryInfo", handle)
        return SimpleNamespace(total=gpu.total, used=gpu.used, free=gpu.total - gpu.used)
