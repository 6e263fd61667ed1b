"""The op graph: which op feeds which, in what order they run. Sources take the request;
the response is the single sink's output, or ``{sink name: output}`` with several.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping, Sequence


class DagError(ValueError):
    """The graph is invalid; ``op`` names the offending op (None: the graph as a whole)."""

    def __init__(self, message: str, op: str | None = None):
        super().__init__(message)
        self.op = op


class Dag:
    """A validated op graph; ``order`` is topological, keeping config order where the edges allow."""

    def __init__(self, edges: Mapping[str, Sequence[str]]):
        names = list(edges)
        if not names:
            raise DagError("the graph has no ops")
        self._index = {name: i for i, name in enumerate(names)}
        self._inputs: dict[str, list[str]] = {}
        for name in names:
            self._inputs[name] = self._checked_inputs(name, edges[name], names)
        self._consumers: dict[str, list[str]] = {name: [] for name in names}
        for name in names:
            for src in self._inputs[name]:
                self._consumers[src].append(name)
        self.order: list[str] = self._toposort(names)
        self.sources: list[str] = [n for n in names if not self._inputs[n]]
        self.sinks: list[str] = [n for n in names if not self._consumers[n]]

    def inputs(self, name: str) -> list[str]:
        """Input op names of ``name`` (empty for a source)."""
        return list(self._inputs[name])

    def consumers(self, name: str) -> list[str]:
        """Ops fed by ``name``, in config order (empty for a sink)."""
        return list(self._consumers[name])

    def edges(self) -> list[tuple[str, str]]:
        """All ``(producer, consumer)`` pairs, consumers in topological order."""
        return [(src, name) for name in self.order for src in self._inputs[name]]

    def __contains__(self, name: object) -> bool:
        return name in self._inputs

    def __iter__(self) -> Iterator[str]:
        return iter(self.order)

    def __len__(self) -> int:
        return len(self.order)

    def __repr__(self) -> str:
        return f"Dag(order={self.order!r}, sources={self.sources!r}, sinks={self.sinks!r})"

    @staticmethod
    def _checked_inputs(name: str, inputs: Sequence[str], names: list[str]) -> list[str]:
        if isinstance(inputs, str):
            raise DagError(f"inputs of op {name!r} must be a list of op names, got {inputs!r}", op=name)
        seen: set[str] = set()
        for src in inputs:
            if src == name:
                raise DagError(f"op {name!r} lists itself as an input", op=name)
            if src not in names:
                close = difflib.get_close_matches(str(src), [n for n in names if n != name], n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f" (ops: {', '.join(names)})"
                raise DagError(f"unknown input op {src!r}{hint}", op=name)
            if src in seen:
                raise DagError(f"input op {src!r} is listed twice", op=name)
            seen.add(src)
        return list(inputs)

    def _toposort(self, names: list[str]) -> list[str]:
        placed: set[str] = set()
        order: list[str] = []
        remaining = list(names)
        while remaining:
            ready = next((n for n in remaining if all(i in placed for i in self._inputs[n])), None)
            if ready is None:
                cycle = self._find_cycle(remaining)
                raise DagError("cycle " + " -> ".join(cycle), op=cycle[0])
            order.append(ready)
            placed.add(ready)
            remaining.remove(ready)
        return order

    def _find_cycle(self, remaining: list[str]) -> list[str]:
        """A cycle among ``remaining`` in data-flow direction, from its first member in config order."""
        pending = set(remaining)
        path: list[str] = []
        node = remaining[0]
        while node not in path:
            path.append(node)
            node = next(i for i in self._inputs[node] if i in pending)
        members = path[path.index(node) :]
        members.reverse()  # we walked against the data flow
        start = min(range(len(members)), key=lambda i: self._index[members[i]])
        members = members[start:] + members[:start]
        return members + [members[0]]
