"""Rewrite the descriptor sets of this package's ``.proto`` files with protoc
(grpcio-tools, in the ``test`` extra): ``python -m serving.protos.generate``.
``--check`` only compares them (tests/unit/test_protos.py runs it)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from google.protobuf import descriptor_pb2

from serving.protos import HERE, PROTOS, descriptor_set_path


def compile_set(proto: str, out: str) -> None:
    from grpc_tools import protoc  # only where the descriptor sets are made

    args = ["protoc", f"-I{HERE}", f"--descriptor_set_out={out}", os.path.join(HERE, proto + ".proto")]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed on {proto}.proto")


def parsed(path: str) -> descriptor_pb2.FileDescriptorSet:
    files = descriptor_pb2.FileDescriptorSet()
    with open(path, "rb") as f:
        files.ParseFromString(f.read())
    return files


def stale() -> list[str]:
    """The protos whose committed descriptor set differs from what protoc makes of them now."""
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        for proto in PROTOS:
            fresh = os.path.join(tmp, proto + ".binpb")
            compile_set(proto, fresh)
            if not os.path.exists(descriptor_set_path(proto)) or parsed(fresh) != parsed(descriptor_set_path(proto)):
                found.append(proto)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serving.protos.generate", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a descriptor set is stale, write nothing")
    args = parser.parse_args(argv)
    if args.check:
        names = stale()
        for name in names:
            sys.stderr.write(f"{name}.binpb is stale: run python -m serving.protos.generate\n")
        return 1 if names else 0
    for proto in PROTOS:
        compile_set(proto, descriptor_set_path(proto))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
