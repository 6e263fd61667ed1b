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
