"""A prediction a view has parsed and checked but not yet submitted: what the app
completes in one of two ways, with the same steps and the same answer: in a
worker thread (submit, wait) or on a front process's event loop (submit,
await), where a light request costs no thread at all."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from werkzeug.wrappers import Response

from serving.batching.request import RequestState
from serving.errors import ServingError
from serving.service.core import Gone, Started


@dataclass(frozen=True)
class Pending:
    start: Callable[[], Started]  # admission, decoding, submission (serving.service.core)
    finish: Callable[[Sequence[RequestState]], Response]  # the answer, once every input is answered
    gone: Gone  # whether the client went away
    # submitting and answering it costs little: text, one input (several wait for the engine's admission)
    light: bool = False
    # the route's own answer to a failure of start or wait (None: the app's error answer)
    fail: Callable[[ServingError], Response] | None = None

    def complete(self) -> Response:
        """Submit and wait (in a worker thread)."""
        try:
            return self.finish(self.start().wait(self.gone))
        except ServingError as err:
            if self.fail is None:
                raise
            return self.fail(err)

    async def settle(self) -> Response:
        """Submit and await (on an event loop; only a :attr:`light` one)."""
        try:
            return self.finish(await self.start().settle(self.gone))
        except ServingError as err:
            if self.fail is None:
                raise
            return self.fail(err)
