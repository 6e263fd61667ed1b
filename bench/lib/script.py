"""How a bench script fails and exits: every script prints its ratio last and
exits non-zero when it could not measure (it raises :class:`BenchError`)."""

from __future__ import annotations

import sys
from collections.abc import Callable


class BenchError(RuntimeError):
    """The benchmark could not measure what it was asked to."""


def run_main(main: Callable[[], int]) -> None:
    """Run a script's main; BenchError -> message on stderr, exit 2."""
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        code = main()
    except BenchError as exc:
        sys.stderr.write(f"could not measure: {exc}\n")
        sys.exit(2)
    sys.exit(code or 0)


def chosen(only: str, known: list[str], option: str = "--only") -> list[str]:
    """The names a ``--only a,b`` option (or another, ``option``) picks from ``known`` (all of them
    when empty), in ``known``'s order; BenchError naming the option and any name it does not know."""
    wanted = set(filter(None, only.split(",")))
    unknown = wanted - set(known)
    if unknown:
        raise BenchError(f"unknown {sorted(unknown)} in {option}; known: {known}")
    return [name for name in known if not wanted or name in wanted]


def first_line(exc: BaseException) -> str:
    """An exception's first line, capped: what a table cell says of a row that could not run."""
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
