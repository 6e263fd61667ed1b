"""The GPUs of this machine as NVML sees them: utilisation and memory per GPU.
NVML is optional (:func:`open_gpus` returns None without it, a driver or a GPU),
and :meth:`Gpus.read`, called at scrape time, never raises: a failing call
skips that GPU for that read, so a sick GPU cannot fail ``/metrics``.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from typing import Any, Protocol, cast

log = logging.getLogger(__name__)


class Nvml(Protocol):
    """The part of ``pynvml`` used here (the module, or a fake with the same functions; NVML's names)."""

    def nvmlInit(self) -> None: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...
    def nvmlDeviceGetName(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetUUID(self, handle: Any) -> str | bytes: ...
    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any: ...


@dataclass(frozen=True)
class GpuReading:
    index: int  # NVML's index (PCI bus order; CUDA_VISIBLE_DEVICES does not renumber it)
    name: str
    uuid: str
    utilization: float  # share of the last sample period a kernel ran, 0..1
    memory_used: int  # bytes
    memory_total: int  # bytes


class _CallFailed(Exception):
    pass


class Gpus:
    """The GPUs NVML counted at start (:func:`open_gpus`)."""

    def __init__(self, nvml: Nvml, count: int):
        self.nvml = nvml
        self.count = count
        self._reported: set[tuple[int, str]] = set()  # (GPU, call) failures already logged

    def read(self) -> list[GpuReading]:
        """One reading per GPU that answered every call; never raises."""
        readings = []
        for index in range(self.count):
            try:
                readings.append(self._read_one(index))
            except _CallFailed:
                continue
        return readings

    def _read_one(self, index: int) -> GpuReading:
        handle = self._call(index, "nvmlDeviceGetHandleByIndex", index)
        rates = self._call(index, "nvmlDeviceGetUtilizationRates", handle)
        memory = self._call(index, "nvmlDeviceGetMemoryInfo", handle)
        return GpuReading(
            index=index,
            name=_text(self._call(index, "nvmlDeviceGetName", handle)),
            uuid=_text(self._call(index, "nvmlDeviceGetUUID", handle)),
            utilization=float(rates.gpu) / 100.0,  # NVML gives percent
            memory_used=int(memory.used),
            memory_total=int(memory.total),
        )

    def _call(self, index: int, call: str, *args: Any) -> Any:
        try:
            return getattr(self.nvml, call)(*args)
        # NVMLError mostly, but whatever a driver binding raises must not fail the scrape
        except Exception as exc:  # noqa: BLE001 - logged (once) and the GPU skipped
            if (index, call) not in self._reported:
                self._reported.add((index, call))
                log.warning("GPU %d: %s failed (%s); its metrics are left out while it fails", index, call, exc)
            raise _CallFailed from exc


def _text(value: str | bytes) -> str:
    """nvidia-ml-py returns str; older pynvml releases returned bytes."""
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def open_gpus(nvml: Nvml | None = None) -> Gpus | None:
    """This machine's GPUs through ``nvml`` (default: ``import pynvml``), or
    None, said once at INFO, where NVML or a GPU is missing."""
    if nvml is None:
        try:
            nvml = cast(Nvml, importlib.import_module("pynvml"))
        except ImportError:
            log.info('GPU metrics off: NVML is not installed (pip install "batchline[gpu]")')
            return None
    try:
        nvml.nvmlInit()
        count = int(nvml.nvmlDeviceGetCount())
    except Exception as exc:  # noqa: BLE001 - no driver (NVMLError_LibraryNotFound, ...): a CPU machine
        log.info("GPU metrics off: NVML did not start (%s)", exc)
        return None
    if count == 0:
        log.info("GPU metrics off: NVML sees no GPU")
        return None
    log.info("GPU metrics on: %d GPU(s) through NVML", count)
    return Gpus(nvml, count)
