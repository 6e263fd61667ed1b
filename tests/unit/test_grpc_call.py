"""serving/grpc/call.py: a failure a handler keeps past its except block keeps none of
the failed call's frames (and so none of its message) alive."""

import gc
import weakref

from serving.errors import BadRequest, ServingError
from serving.grpc.call import without_frames


class Message:
    """Stands in for a request message (a weak reference tells when it is freed)."""


def parse(message: Message) -> None:
    try:
        raise ValueError("undecodable")
    except ValueError:
        raise BadRequest("not a valid message") from None  # its context: the ValueError, and its frames


def handle(cut: bool) -> tuple[ServingError, weakref.ref]:
    message = Message()
    freed = weakref.ref(message)
    try:
        parse(message)
    except ServingError as err:
        failure = err
    del message
    return (without_frames(failure) if cut else failure), freed


def test_a_kept_failure_cut_from_its_frames_frees_the_message_without_the_collector():
    gc.disable()
    try:
        failure, freed = handle(cut=False)
        assert freed() is not None  # the cycle: what without_frames is for
        failure, freed = handle(cut=True)
        assert freed() is None and failure.message == "not a valid message"
    finally:
        gc.enable()
