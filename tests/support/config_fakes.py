"""Fake ops for config/registry tests: no models, no paddle."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from serving.op import Op


class FakeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threshold: float = Field(0.5, ge=0, le=1)


class FakeOp(Op):
    """Needs no model; one param."""

    Params = FakeParams
    needs_model = False


class FakeModelOp(Op):
    """Needs a model directory."""

    needs_model = True


class NotAnOp:
    """Not an Op subclass."""


class FakeTextOp(Op):
    """Takes text from the request."""

    needs_model = False
    input_kind = "text"


class FakeImageOp(Op):
    """Takes an image from the request."""

    needs_model = False
    input_kind = "image"


class FakeSizedOp(Op):
    """Gives item sizes, so it takes ``max_batch_units``."""

    needs_model = False
    pad_unit = "tokens"

    def pad_extent(self, item):
        return (len(item),)
