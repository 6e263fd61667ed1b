"""Which HTTP front reads requests (``http.front``): both take the same
arguments and give the same ``start``/``drain``/``apply_body_limits``."""

from __future__ import annotations

from serving.config.schema import HttpConf
from serving.http.asyncio_front import AsyncioFront
from serving.http.waitress_front import WaitressFront

HttpFront = AsyncioFront | WaitressFront
FRONTS: dict[str, type[AsyncioFront] | type[WaitressFront]] = {"asyncio": AsyncioFront, "waitress": WaitressFront}


def front_class(http: HttpConf) -> type[AsyncioFront] | type[WaitressFront]:
    return FRONTS[http.front]
