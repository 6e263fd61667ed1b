"""The fault-injection op, for tests and soaks (not in the wheel).

``FaultOp`` is :class:`~tests.support.image_fakes.ImageStatsOp` (same inputs,
answers, cost and pixel-keyed faults) whose "model" is a :class:`FaultModel`
built through :meth:`serving.op.Op.model_factory`. So with ``instance_mode:
process`` it runs in supervised predictor processes, under ``max_rss_mb``,
exactly as a Paddle model would, and its faults happen there:

- at a rate, per run of a batch holding real requests (``params``):
  ``fail_rate`` (the run raises), ``hang_rate`` (it sleeps ``hang_s``),
  ``kill_rate`` (the process SIGKILLs itself), and ``leak_mb`` (each such run
  keeps that much more memory, touched so that it is resident);
- on demand, for the batch holding a marked image (:func:`make_image` with
  ``fault=``): the codes of ``image_fakes.FAULTS``, ``hang`` and
  ``kill_process`` included.

Warm-up runs (the engine's, at start and after a restart or recycle) are
never faulted, so an instance can always start. With ``instance_mode:
thread`` the model runs in the server's process, and ``kill_process`` ends
the server: the in-process crash.
"""

from __future__ import annotations

import functools
import os
import random
import signal
import time
from typing import Any

import numpy as np
from pydantic import Field

from tests.support.image_fakes import FAULTS, SLOW_S, ImageStatsOp, ImageStatsParams, image_config

WARMUP = 99  # the fault code of warm-up items: never faulted

FAULT_OP = "tests.support.fault_op:FaultOp"


class FaultParams(ImageStatsParams):
    fail_rate: float = Field(default=0.0, ge=0.0, le=1.0)  # per run: the run raises
    hang_rate: float = Field(default=0.0, ge=0.0, le=1.0)  # per run: it sleeps hang_s
    hang_s: float = Field(default=3600.0, ge=0.0)
    kill_rate: float = Field(default=0.0, ge=0.0, le=1.0)  # per run: the process SIGKILLs itself
    leak_mb: float = Field(default=0.0, ge=0.0)  # per run: memory kept for good
    seed: int | None = None  # None: a different sequence in each process


class FaultModel:
    """y = 2x, costing ``delay_ms + per_item_ms * n``, with the faults of ``params``."""

    input_names = ["x", "fault"]
    output_names = ["y"]

    def __init__(self, params: dict[str, Any], device_id: int | None = None):
        self.p = FaultParams.model_validate(params)
        seed = self.p.seed if self.p.seed is not None else int.from_bytes(os.urandom(8), "little")
        self._rng = random.Random(seed)
        self._leaked: list[bytearray] = []

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        x, codes = feed["x"], set(feed["fault"].tolist())
        real = bool(codes - {WARMUP})
        cost = self.p.delay_ms / 1000.0 + self.p.per_item_ms / 1000.0 * len(x)
        if FAULTS["slow"] in codes:
            cost += SLOW_S
        if real:
            self._rate_faults()
        if FAULTS["kill_process"] in codes:
            self._kill()
        if FAULTS["hang"] in codes:
            time.sleep(self.p.hang_s)
        if cost:
            time.sleep(cost)
        if FAULTS["run"] in codes:
            raise RuntimeError("injected predictor failure")
        return [x * 2]

    def _rate_faults(self) -> None:
        if self.p.leak_mb:
            block = bytearray(int(self.p.leak_mb * (1 << 20)))
            block[::4096] = b"\1" * len(block[::4096])  # touch every page: resident, not just reserved
            self._leaked.append(block)
        draw = self._rng.random
        if draw() < self.p.kill_rate:
            self._kill()
        if draw() < self.p.hang_rate:
            time.sleep(self.p.hang_s)
        if draw() < self.p.fail_rate:
            raise RuntimeError("injected predictor failure (fail_rate)")

    @staticmethod
    def _kill() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def close(self) -> None:
        self._leaked.clear()


class FaultOp(ImageStatsOp):
    Params = FaultParams

    def create_runners(self, count: int) -> None:
        return None  # the engine builds them from model_factory, in processes if configured

    def model_factory(self) -> functools.partial[FaultModel]:
        return functools.partial(FaultModel, self.params.model_dump())

    def collate(self, items):
        subs = super().collate(items)
        codes = [WARMUP if it[3] == "warmup" else FAULTS.get(it[3], 0) for it in items]
        subs[0].feed["fault"] = np.array(codes, np.int32)
        return subs

    def warmup_items(self):
        return [(2, 2, 1.0, "warmup")]


def fault_config(*, params: dict[str, Any] | None = None, service: dict[str, Any] | None = None, **kwargs: Any) -> str:
    """YAML text of a one-op image pipeline on :class:`FaultOp` (``image_config``'s
    keywords; ``service`` adds ``local_service_conf`` keys, e.g. instance_mode)."""
    return image_config(op_class=FAULT_OP, params=params, service=service, **kwargs)
