"""A Paddle Serving model folder as its users have it: ``serving_server_conf.prototxt`` (feed
and fetch variables: names, aliases, types, shapes) beside the model's files, or a plain Paddle
inference folder. The prototxt is protobuf's text format of ``GeneralModelConfig``; its few
fields are read here without Paddle Serving's generated code."""

from __future__ import annotations

import glob
import hashlib
import os
import re
from dataclasses import dataclass, field

SERVER_CONF = "serving_server_conf.prototxt"
_TOKEN = re.compile(
    r'\s*(?:(#[^\n]*)|([A-Za-z_][A-Za-z0-9_]*)\s*:\s*("(?:[^"\\]|\\.)*"|[^\s{}]+)|([A-Za-z_][A-Za-z0-9_]*)\s*\{|(\}))'
)


class ModelFolderError(ValueError):
    """A model folder that cannot be read (named in the message)."""


@dataclass(frozen=True)
class Var:
    name: str
    alias_name: str
    is_lod_tensor: bool = False
    type: int = 0  # Paddle Serving's feed_type / fetch_type: 0 int64, 1 float32, 2 int32, ...
    shape: tuple[int, ...] = ()


@dataclass(frozen=True)
class ModelFolder:
    path: str
    feed_vars: tuple[Var, ...] = field(default=())
    fetch_vars: tuple[Var, ...] = field(default=())
    has_conf: bool = False

    @property
    def fetch_aliases(self) -> list[str]:
        return [v.alias_name for v in self.fetch_vars]


def _unquote(text: str) -> str:
    if text.startswith('"'):
        return bytes(text[1:-1], "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")
    return text


def parse_prototxt(text: str, source: str) -> tuple[list[Var], list[Var]]:
    """(feed vars, fetch vars) of a ``GeneralModelConfig`` in protobuf text format."""
    blocks: dict[str, list[Var]] = {"feed_var": [], "fetch_var": []}
    pos, current, fields = 0, None, {}  # type: ignore[var-annotated]
    shape: list[int] = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip():
                raise ModelFolderError(f"{source}: cannot read the text at {text[pos : pos + 40]!r}")
            break
        pos = m.end()
        comment, key, value, block, close = m.groups()
        if comment:
            continue
        if block:
            if current is not None or block not in blocks:
                raise ModelFolderError(f"{source}: unexpected block {block!r}")
            current, fields, shape = block, {}, []
        elif close:
            if current is None:
                raise ModelFolderError(f"{source}: unbalanced '}}'")
            kind = "feed_type" if current == "feed_var" else "fetch_type"
            name = str(fields.get("name", ""))
            blocks[current].append(
                Var(
                    name=name,
                    alias_name=str(fields.get("alias_name", name)),
                    is_lod_tensor=fields.get("is_lod_tensor") == "true",
                    type=int(fields.get(kind, 0)),
                    shape=tuple(shape),
                )
            )
            current = None
        elif current is not None:
            if key == "shape":
                shape.append(int(value))
            else:
                fields[key] = _unquote(value)
    if current is not None:
        raise ModelFolderError(f"{source}: block {current!r} is not closed")
    return blocks["feed_var"], blocks["fetch_var"]


def read_model_folder(path: str) -> ModelFolder:
    """The folder's variables (none without a prototxt: the model's own names are used)."""
    if not os.path.isdir(path):
        raise ModelFolderError(f"model_config {path!r}: no such folder")
    conf = os.path.join(path, SERVER_CONF)
    if not os.path.exists(conf):
        return ModelFolder(path)
    with open(conf, encoding="utf-8") as f:
        feeds, fetches = parse_prototxt(f.read(), conf)
    return ModelFolder(path, tuple(feeds), tuple(fetches), has_conf=True)


def model_files(path: str) -> tuple[str, str] | None:
    """The (program, params) files Paddle Serving's local predictor would load from ``path``:
    ``__model__``/``__params__``, else the first ``*.pdmodel``/``*.pdiparams``; None if neither."""
    if os.path.exists(os.path.join(path, "__params__")):
        return os.path.join(path, "__model__"), os.path.join(path, "__params__")
    programs = sorted(glob.glob(os.path.join(path, "*.pdmodel")))
    params = sorted(glob.glob(os.path.join(path, "*.pdiparams")))
    if programs and params:
        return programs[0], params[0]
    return None


#: the names batchline's engines read a Paddle model folder by
ENGINE_NAMES = ("inference.pdmodel", "inference.pdiparams")


def engine_folder(path: str, cache: str) -> str:
    """``path`` itself when its model files have the names batchline's engines read, else a
    folder under ``cache`` (one per source folder, kept) linking those names to its files
    (Paddle Serving also loads ``__model__``/``__params__`` and any ``*.pdmodel``)."""
    files = model_files(path)
    if files is None or tuple(os.path.basename(f) for f in files) == ENGINE_NAMES:
        return path
    source = os.path.realpath(path)
    linked = os.path.join(cache, hashlib.sha256(source.encode()).hexdigest()[:16])
    os.makedirs(linked, exist_ok=True)
    pairs = list(zip(ENGINE_NAMES, files))
    if os.path.exists(os.path.join(path, SERVER_CONF)):
        pairs.append((SERVER_CONF, os.path.join(path, SERVER_CONF)))
    for name, target in pairs:
        link = os.path.join(linked, name)
        if os.path.islink(link) and os.readlink(link) != os.path.realpath(target):
            os.remove(link)
        if not os.path.lexists(link):
            os.symlink(os.path.realpath(target), link)
    return linked
