"""Which paths take a request body: the prediction routes, no other. A body sent elsewhere
could only be meant to cost the server: every front refuses it 413 from the headers (after
the token check, so a caller without it learns nothing), and the app applies the same rule."""

from __future__ import annotations

from serving.errors import PayloadTooLarge

#: how the path of every route that reads a body ends
BODY_ROUTE_ENDS = ("/prediction", "/predict", "/infer")


def takes_body(path: str) -> bool:
    """Whether a request for ``path`` (without the app's mount prefix) may carry a body."""
    return path.endswith(BODY_ROUTE_ENDS)


def no_body_refusal(path: str) -> PayloadTooLarge:
    """The 413 of a body sent to ``path``, which takes none."""
    return PayloadTooLarge(f"{path[:128]} takes no request body")
