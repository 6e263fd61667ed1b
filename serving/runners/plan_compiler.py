"""TorchInductor for one model's frozen plans (``torch_compile``), compiled on the
process's compile thread within a budget of seconds.

A bucket's plan is first traced to ATen operations (``make_fx`` runs it once and keeps
a straight-line graph, every shape fixed), then Inductor compiles that graph, fusing
the element-wise steps around the convolutions. ``torch.compile`` on the plan itself
splits it into many graphs (docs/DESIGN_NOTES.md, "torch_compile").

A compile takes tens of seconds per shape and every bucket is a shape: no request
waits for one. A bucket runs its plan (or its CUDA graph) until the compiled form is
ready, and the budget bounds the seconds spent compiling for the model's life, the
first buckets asked for (the ones warm-up runs) first. One compiler serves the
instances of a model on one device; it stops when the last of them leaves.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import torch

from serving.runners.frozen_plan import FrozenPlan, InputSpec, freeze
from serving.runners.onnx_graph import OnnxGraph

log = logging.getLogger(__name__)

Tensor = torch.Tensor
Bucket = tuple[InputSpec, ...]


class Pending:
    """:meth:`PlanCompiler.result` of a bucket still queued or compiling."""

    def __repr__(self) -> str:
        return "PENDING"


PENDING = Pending()


class CompileThread:
    """The one thread a process compiles on, running the jobs given to it in turn; started at
    the first job, it lives as long as the process.

    One thread: Inductor's compile is not thread-safe (``torch.compile`` holds a process-wide
    lock around it), and det and rec in one device process each have a compiler. A lasting
    one: on a CUDA build of PyTorch where no GPU is visible, each ``make_fx`` trace registers
    a no-op CUDA device guard, and once the first thread that registered one has exited, the
    next registration crashes the process (torch 2.11.0+cu130, not 2.14.1; docs/DESIGN_NOTES.md,
    "torch_compile"). A daemon: a process that exits does not wait for a compile."""

    def __init__(self, name: str = "bl-compile"):
        self._name = name
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0  # the process the thread runs in: a forked child starts its own

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` on the thread after the jobs before it (an exception it raises is logged)."""
        with self._lock:
            if self._thread is None or self._pid != os.getpid():
                self._jobs = queue.SimpleQueue()
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, args=(self._jobs,), name=self._name, daemon=True)
                self._thread.start()
            self._jobs.put(job)

    @property
    def ident(self) -> int | None:
        """The thread's id, once started."""
        return self._thread.ident if self._thread is not None else None

    @staticmethod
    def _run(jobs: queue.SimpleQueue[Callable[[], None]]) -> None:
        while True:
            job = jobs.get()
            try:
                job()
            except Exception:  # noqa: BLE001 - the thread serves the process's other compiles
                log.exception("a compile job failed")


# The process's compile thread: a process-wide resource, as Inductor's own state is.
PROCESS_COMPILE_THREAD = CompileThread()


class CompiledPlan:
    """A bucket's plan compiled: ``compiled(*inputs)`` -> the graph's outputs, a tuple (fresh tensors)."""

    def __init__(self, run: Callable[..., Sequence[Tensor]], plan: FrozenPlan):
        self._run = run
        self.plan = plan  # held: the device tensors the trace took as constants are the plan's

    @property
    def bucket(self) -> Bucket:
        return self.plan.bucket

    def __call__(self, *inputs: Tensor) -> tuple[Tensor, ...]:
        return tuple(self._run(*inputs))

    def __repr__(self) -> str:
        return f"CompiledPlan({[s.shape for s in self.bucket]})"


def inductor_compile(plan: FrozenPlan, device: torch.device) -> CompiledPlan:
    """``plan`` traced to ATen and compiled by Inductor (C++ on the CPU, Triton on a GPU)."""
    import torch._inductor
    from torch.fx.experimental.proxy_tensor import make_fx

    inputs: list[Any] = [torch.zeros(spec.shape, dtype=spec.dtype, device=device) for spec in plan.bucket]
    # on a GPU: a side stream, not the legacy default one, which would wait for every instance's stream
    stream = torch.cuda.Stream(device) if device.type == "cuda" else None
    with torch.inference_mode(), torch.cuda.stream(stream) if stream is not None else nullcontext():
        traced = make_fx(lambda *xs: plan(*xs))(*inputs)
        run = torch._inductor.compile(traced, inputs)
        run(*inputs)  # anything left to prepare on a first call happens here, not in a request
    if stream is not None:
        stream.synchronize()
    return CompiledPlan(run, plan)


class PlanCompiler:
    """Compiles the buckets asked for, one at a time, in order, on the process's compile
    thread (a bucket a turn: two models' compiles alternate).

    The budget is checked before each compile: none starts once the seconds spent reach
    it, or would pass it if this compile took as long as the last. A compile that fails
    is logged and its bucket keeps its plan."""

    def __init__(
        self,
        module: OnnxGraph,
        device: torch.device | str,
        budget_s: float,
        compile_plan: Callable[[FrozenPlan, torch.device], Any] = inductor_compile,
        clock: Callable[[], float] = time.monotonic,
        name: str = "model",
        thread: CompileThread = PROCESS_COMPILE_THREAD,
    ):
        self._module = module
        self._device = torch.device(device)
        self._budget_s = budget_s
        self._compile_plan = compile_plan
        self._clock = clock
        self._name = name
        self._lock = threading.Lock()
        self._queue: deque[Bucket] = deque()
        self._results: dict[Bucket, Any] = {}
        self._thread = thread
        self._idle = threading.Event()  # nothing queued or compiling
        self._idle.set()
        self._spent_s = 0.0
        self._last_s = 0.0
        self._users = 0
        self._closed = False

    def attach(self) -> None:
        """An instance uses this compiler (each one :meth:`detach`-es when it closes)."""
        with self._lock:
            self._users += 1

    def detach(self) -> None:
        """An instance leaves: with the last one, nothing more is compiled (a compile under
        way finishes, and is dropped)."""
        with self._lock:
            self._users -= 1
            if self._users <= 0:
                self._closed = True
                self._queue.clear()

    def request(self, bucket: Bucket) -> None:
        """Compile ``bucket`` when its turn comes (a bucket asked for twice is compiled once)."""
        with self._lock:
            if self._closed or bucket in self._results:
                return
            if self._over_budget():
                self._results[bucket] = None
                return
            self._results[bucket] = PENDING
            self._queue.append(bucket)
            if self._idle.is_set():
                self._idle.clear()
                self._thread.submit(self._work)

    def result(self, bucket: Bucket) -> Any:
        """The compiled plan of ``bucket``; :data:`PENDING` while it waits or compiles; None where it
        will not be compiled (not asked for, failed, or past the budget)."""
        with self._lock:
            return self._results.get(bucket)

    @property
    def spent_s(self) -> float:
        with self._lock:
            return self._spent_s

    @property
    def busy(self) -> bool:
        """A compile is queued or under way."""
        return not self._idle.is_set()

    def wait(self, timeout_s: float) -> bool:
        """Wait until nothing is queued or compiling (True), or ``timeout_s`` passes (False)."""
        return self._idle.wait(timeout_s)

    def _over_budget(self) -> bool:
        return self._spent_s >= self._budget_s or self._spent_s + self._last_s > self._budget_s

    def _work(self) -> None:
        """One turn on the compile thread: the next bucket, then back in line behind the other
        models' turns while buckets are left."""
        with self._lock:
            bucket = self._queue.popleft() if self._queue and not self._closed else None
            if bucket is not None and self._over_budget():
                self._give_up(bucket)
                bucket = None
        try:
            if bucket is not None:
                self._compile(bucket)
        finally:
            with self._lock:
                if self._queue and not self._closed:
                    self._thread.submit(self._work)
                else:
                    self._idle.set()

    def _give_up(self, bucket: Bucket) -> None:
        """Past the budget: this bucket and every one queued keep their plans (called holding the lock)."""
        left = [bucket, *self._queue]
        self._queue.clear()
        for b in left:
            self._results[b] = None
        compiled = sum(r is not None and r is not PENDING for r in self._results.values())
        log.warning(
            "torch_compile for %s: the budget of %.0fs is spent (%.0fs): %d shape(s) compiled, %d left on their plans",
            self._name,
            self._budget_s,
            self._spent_s,
            compiled,
            len(left),
        )

    def _compile(self, bucket: Bucket) -> None:
        compiled: Any = None
        began = self._clock()  # the budget counts compiling, not waiting for another model's turn
        try:
            compiled = self._compile_plan(freeze(self._module, bucket, self._device), self._device)
        except Exception as e:  # noqa: BLE001 - the plan still answers: compiling was an optimisation
            log.warning(
                "torch_compile for %s: could not compile %s (%s: %s); it runs its plan",
                self._name,
                [s.shape for s in bucket],
                type(e).__name__,
                e,
            )
        took = self._clock() - began
        with self._lock:
            self._spent_s += took
            self._last_s = took
            self._results[bucket] = compiled
            left = self._budget_s - self._spent_s
        if compiled is not None:
            log.info(
                "torch_compile for %s: compiled %s in %.1fs (%.0fs of the budget left)",
                self._name,
                [s.shape for s in bucket],
                took,
                left,
            )
