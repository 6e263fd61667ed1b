"""serving.errors: one rule for status and err_no, kept by every error class."""

from __future__ import annotations

import pytest

from serving import errors
from serving.batching.channel import ChannelClosed

CLASSES = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.ServingError)]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_each_class_has_one_real_status_and_err_no_is_that_status(cls):
    err = cls("x") if cls not in (errors.Overloaded, errors.ShuttingDown) else cls()
    assert 400 <= cls.status < 600 and err.status == cls.status
    assert err.err_no == err.status != 0


def test_with_prefix_keeps_class_status_and_retry_after():
    err = errors.Overloaded("busy", retry_after=7).with_prefix("input 3: ")
    assert type(err) is errors.Overloaded and err.status == 503 and err.retry_after == 7
    assert err.message == "input 3: busy" and str(err) == "input 3: busy"


@pytest.mark.parametrize(
    "status, cls",
    [
        (400, errors.BadRequest),
        (404, errors.NotFound),
        (405, errors.MethodNotAllowed),
        (413, errors.PayloadTooLarge),
        (415, errors.UnsupportedMediaType),
        (503, errors.Overloaded),
        (431, errors.BadRequest),
        (502, errors.InternalError),
    ],
)
def test_statuses_raised_outside_our_code_map_to_a_class(status, cls):
    assert type(errors.error_for_status(status, "m")) is cls


def test_a_closed_channel_is_a_shutdown_refusal():
    err = ChannelClosed("rec")
    assert isinstance(err, errors.ShuttingDown) and err.status == 503 and err.retry_after
    assert errors.as_serving_error(err) is err
