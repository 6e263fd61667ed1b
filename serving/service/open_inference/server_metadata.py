"""The server as the protocol describes it (``GET /v2``, ServerMetadata)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

SERVER_NAME = "batchline"
#: the protocol's extensions this server implements
EXTENSIONS = ("binary_tensor_data",)


def server_version() -> str:
    try:
        return version("batchline")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


def server_metadata() -> dict[str, object]:
    return {"name": SERVER_NAME, "version": server_version(), "extensions": list(EXTENSIONS)}
