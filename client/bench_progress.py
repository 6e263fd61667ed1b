"""``batchline bench``'s live progress: one line per load level (rich), its
phase, a bar over warm-up + measured time and the counts so far. Finished
levels stay on screen above the running one.

Shown on a terminal, or anywhere when forced (``--progress``: rich then
writes its terminal codes to the stream as it would to a terminal, so a log
or ``tee`` keeps a live view)."""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn


class LevelReport:
    """The callback a load generator reports to (``loadgen.Progress``) for one level."""

    def __init__(self, progress: Progress, task: TaskID, total_s: float):
        self._progress, self._task, self._total = progress, task, total_s

    def __call__(self, p: dict[str, Any]) -> None:
        self._progress.update(
            self._task,
            completed=min(p["elapsed_s"], self._total),
            phase=p["phase"],
            counts=f"ok={p['ok']} failed={p['failed']} dropped={p['dropped']}",
        )

    def done(self) -> None:
        self._progress.update(self._task, completed=self._total, phase="done")


class BenchProgress:
    """A context manager around the whole run; :meth:`level` is None when not shown."""

    def __init__(self, stream: TextIO, *, show: bool, force: bool):
        self._progress: Progress | None = None
        if show:
            console = Console(file=stream, force_terminal=True if force else None, highlight=False)
            self._progress = Progress(
                TextColumn("[bold]{task.description:>12}"),
                TextColumn("{task.fields[phase]:<6}"),
                BarColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.fields[counts]}"),
                console=console,
                refresh_per_second=4,
            )

    def __enter__(self) -> BenchProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()

    def level(self, name: str, total_s: float) -> LevelReport | None:
        """A new line for the level ``name`` lasting about ``total_s`` seconds (warm-up + measured)."""
        if self._progress is None:
            return None
        task = self._progress.add_task(name, total=total_s, phase="start", counts="")
        return LevelReport(self._progress, task, total_s)
