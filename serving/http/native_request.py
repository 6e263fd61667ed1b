"""The native route's body (``POST /<name>/predict``): JSON, multipart uploads or a raw
image or text, parsed into a :class:`ParsedRequest`. HTTP's own formats, so they live here."""

from __future__ import annotations

from typing import Any

from werkzeug.exceptions import RequestEntityTooLarge

from serving.errors import BadRequest, PayloadTooLarge
from serving.service.decode import key_kind
from serving.service.parse import ParsedRequest, check_count, json_body, read_options

# multipart parts beyond the inputs (fields a client adds and the server ignores)
FORM_PARTS_SLACK = 16


def parse_native(request: Any, *, kind: str, max_inputs: int, priority_levels: int) -> ParsedRequest:
    """JSON ``{"inputs": [{"image": b64} | {"text": s}]}``, multipart uploads
    (fields ``image`` / ``text``), or a raw ``image/*`` / ``text/plain`` body.
    Options come from the JSON body or the query string."""
    mimetype = request.mimetype or ""
    parsed = ParsedRequest()
    if mimetype == "application/json":
        body = json_body(request.get_data(), max_inputs)
        if not isinstance(body, dict) or not isinstance(body.get("inputs"), list):
            raise BadRequest("JSON body must be an object with an 'inputs' list")
        read_options(body, parsed, priority_levels)
        check_count(len(body["inputs"]), max_inputs)
        for i, entry in enumerate(body["inputs"]):
            if not isinstance(entry, dict) or len(entry) != 1:
                raise BadRequest(f'inputs[{i}] must be an object with one key, e.g. {{"{kind}": ...}}')
            ((key, value),) = entry.items()
            if key_kind(key) != kind:
                raise BadRequest(f"inputs[{i}] has key {str(key)[:64]!r}; this pipeline takes {kind!r}")
            parsed.inputs.append((kind, value, False))
        return parsed
    read_options(request.args.to_dict(), parsed, priority_levels)
    if mimetype == "multipart/form-data":
        parsed.inputs = _form_inputs(request, kind, max_inputs)
        check_count(len(parsed.inputs), max_inputs)
        return parsed
    if (kind == "image" and mimetype.startswith("image/")) or (kind == "text" and mimetype == "text/plain"):
        parsed.inputs = [(kind, request.get_data(), True)]
        check_count(1 if parsed.inputs[0][1] else 0, max_inputs)
        return parsed
    raise BadRequest(
        f"unsupported Content-Type {mimetype or '(none)'!r}; send application/json, "
        f"multipart/form-data or {'image/*' if kind == 'image' else 'text/plain'}"
    )


def _form_inputs(request: Any, kind: str, max_inputs: int) -> list[tuple[str, Any, bool]]:
    """The inputs of a multipart body: parts (a few KB of objects each) follow the inputs
    allowed; a text field may be as large as the body, not werkzeug's 500 KB."""
    max_parts = max_inputs + FORM_PARTS_SLACK
    request.max_form_parts = max_parts
    request.max_form_memory_size = request.max_content_length
    try:
        if kind == "image":
            return [(kind, f.read(), True) for f in request.files.getlist("image")]
        inputs: list[tuple[str, Any, bool]] = [(kind, t, False) for t in request.form.getlist("text")]
        return inputs + [(kind, f.read(), True) for f in request.files.getlist("text")]
    except RequestEntityTooLarge:
        raise PayloadTooLarge(
            f"multipart body over a limit: at most {max_parts} parts (max_inputs_per_request + "
            f"{FORM_PARTS_SLACK}) and max_body_size in all"
        ) from None
