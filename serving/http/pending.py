"""A prediction a view has parsed and checked but not yet submitted: the app completes it
in a worker thread (submit, wait) or on a front process's loop (submit, await), with the
same steps and answer."""

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
