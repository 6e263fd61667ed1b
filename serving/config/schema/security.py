"""Who may reach the server: ``security:`` (a server key)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from serving.config.errors import FieldProblem
from serving.config.netloc import normalize_host_pattern, normalize_origin


class SecurityConf(BaseModel):
    """``security:``, entries kept in canonical form (:mod:`serving.config.netloc`)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    insecure: bool = Field(
        default=False,
        description="Start on a non-loopback `host` with no `auth_token` (behind your own gateway); also "
        "`batchline serve --insecure` or `BATCHLINE_INSECURE=1`. Without it such a server exits 2 at start.",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Browser origins (`scheme://host[:port]`, default ports may be left out) whose requests "
        "pass without a token besides the server's own. batchline sends no CORS headers: a gateway that "
        "answers CORS for them forwards their requests.",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="`Host` header names served (exact, an IP address, or `*.name` for the names below "
        "`name`; no port); any other gets 400 (against DNS rebinding). Empty: any. Health probes are exempt.",
    )

    @field_validator("allowed_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        return _each_normalized(value, normalize_origin, "an origin scheme://host[:port] (no path)")

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        return _each_normalized(value, normalize_host_pattern, "a host name, an IP address or *.name (no port)")


def _each_normalized(value: list[str], normalize: Callable[[str], str | None], what: str) -> list[str]:
    """Each item in its canonical form; the first that has none is a problem naming its index."""
    out = []
    for i, item in enumerate(value):
        canonical = normalize(item)
        if canonical is None:
            raise FieldProblem(str(i), f"must be {what}, got {item!r}")
        out.append(canonical)
    return out
