"""``batchline predict``: send images (and/or texts) to a server and print the results.

    batchline predict --url http://127.0.0.1:9999 photos/ card.jpg
    batchline predict --url ... --pipeline ernie --text "这个产品很好"
    batchline predict --url ... --draw out/ card.jpg
    batchline predict --url ... --draw out/ --font /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc card.jpg
    batchline predict --url ... --version 2 card.jpg        # POST /ocr/v2/prediction
    batchline predict --url ... --route-key user-7 card.jpg  # sticky A/B routing
    batchline predict --url ... --protocol grpc --rpc-url 127.0.0.1:9998 card.jpg  # gRPC on rpc_port

One request per image (a directory means every image in it, sorted) and one
per ``--text``. Without ``--pipeline`` they go to ``ocr``, or to the only pipeline
the server runs when that is not ``ocr`` (one ``GET /pipelines`` asks, whatever the
protocol); a server running several, none of them ``ocr``, is an error that names
them. Output per input: ``== <path or text>`` then, for OCR, one
``text<TAB>score`` line per recognised line (``text<TAB>score<TAB>label<TAB>label
score`` when the pipeline labels its lines, as ``ocr_ernie`` does), for
classification ``label<TAB>score``; ``--json`` prints each result as JSON instead. Exit
status 1 if any request failed (the error, with its HTTP status, goes to
stderr).

``--draw`` writes Chinese text with a CJK font found on the machine
(client/fonts.py) or ``--font``; when the font it has cannot draw the characters
of a result (they would be boxes), a warning says so once, and how to fix it.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO
from urllib.parse import urlsplit

from .grpc_calls import rpc_target
from .pipeline_client import ROUTE_HEADER, PipelineClient, PipelineError
from .protocols import GRPC_PROTOCOLS, PROTOCOLS

DEFAULT_PIPELINE = "ocr"
IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff")
# the variable the server reads its token from (serving/service/auth.py; the client does not import serving)
TOKEN_ENV = "BATCHLINE_AUTH_TOKEN"
TOKEN_HELP = f"bearer token (default: ${TOKEN_ENV}, the variable the server reads; gRPC: 'authorization' metadata)"
PROTOCOL_HELP = (
    "paddle: POST /NAME/prediction (default); native: POST /NAME/predict, JSON; "
    "binary: POST /NAME/predict, the image or text as the raw body (no base64); "
    "grpc: Paddle Serving's PipelineService.inference at --rpc-url; "
    "v2: the Open Inference Protocol (KServe v2) over HTTP, POST /v2/models/NAME/infer with binary tensors; "
    "v2-grpc: its GRPCInferenceService/ModelInfer at --rpc-url"
)
RPC_URL_HELP = (
    "the server's gRPC address, HOST:PORT or PORT (then --url's host): its rpc_port, for --protocol grpc and v2-grpc"
)
PIPELINE_HELP = (
    f"pipeline name (default: {DEFAULT_PIPELINE}, or the only pipeline the server runs when that is another: "
    "one GET /pipelines asks)"
)
FONT_HELP = (
    "font file for --draw's text (.ttf, .ttc, .otf; default: a CJK font found on this machine, e.g. "
    "fonts-wqy-zenhei's or fonts-noto-cjk's, else DejaVu, which draws Chinese as boxes)"
)
# what a machine without a CJK font needs (Debian, Ubuntu; fonts-noto-cjk works too)
CJK_FONT_PACKAGE = "fonts-wqy-zenhei"


def resolve_token(given: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The bearer token to send: ``--token`` when given, else ``$BATCHLINE_AUTH_TOKEN``; None for no token."""
    if given is not None:
        return given
    env = os.environ if environ is None else environ
    return env.get(TOKEN_ENV) or None


def rpc_address(rpc_url: str | None, url: str) -> str | None:
    """``--rpc-url`` as HOST:PORT: a bare PORT takes ``url``'s host; None when not given."""
    if not rpc_url or not rpc_url.isdigit():
        return rpc_url or None
    host = urlsplit(url if "://" in url else "http://" + url).hostname or "127.0.0.1"
    return f"[{host}]:{rpc_url}" if ":" in host else f"{host}:{rpc_url}"


def protocol_problem(protocol: str, rpc_url: str | None) -> str | None:
    """Why ``protocol`` cannot be used as asked (a gRPC one without --rpc-url), or None."""
    if protocol in GRPC_PROTOCOLS and not rpc_url:
        return f"--protocol {protocol} needs --rpc-url HOST:PORT (the server's rpc_port)"
    if rpc_url:
        try:
            rpc_target(rpc_url)
        except ValueError as e:
            return f"--rpc-url: {e}"
    return None


def pick_pipeline(names: Sequence[str]) -> str:
    """The pipeline to send to when none is named, among the ``names`` a server runs:
    ``ocr`` when it is one of them (or the server runs none: its 404 says so), else the
    only one; ValueError, its message for the user, when there are several and no ``ocr``."""
    if DEFAULT_PIPELINE in names or not names:
        return DEFAULT_PIPELINE
    if len(names) == 1:
        return names[0]
    raise ValueError(
        f"the server runs {len(names)} pipelines, none named {DEFAULT_PIPELINE!r}: {', '.join(names)}; "
        "pick one with --pipeline NAME"
    )


def default_pipeline(client: PipelineClient) -> str:
    """:func:`pick_pipeline` among the pipelines the server lists (``GET /pipelines``).

    A server that does not answer the listing (Paddle Serving's own servers have none,
    a refused token, no server at all) gets ``ocr``, as before: its answer to the
    prediction itself then says what is wrong."""
    try:
        names = client.pipeline_names()
    except PipelineError:
        return DEFAULT_PIPELINE
    return pick_pipeline(names)


def font_problem(path: str | None) -> str | None:
    """Why ``--font`` cannot be drawn with (no such file, not a font), or None."""
    if path is None:
        return None
    from PIL import ImageFont  # lazy: PIL only when drawing

    try:
        ImageFont.truetype(path, 16)
    except (OSError, ValueError) as e:
        return f"--font {path}: not a font file that can be read ({e})"
    return None


def cjk_font_warning(result: Any, font_path: str | None, out_dir: str) -> str | None:
    """The warning for a drawing of ``result`` whose Chinese (CJK) characters the font
    cannot draw (PIL draws them as boxes), with the fix; None when every one is drawn."""
    from .draw import missing_glyphs  # lazy: PIL only when drawing
    from .fonts import find_font

    items = result if isinstance(result, list) else []
    missing = missing_glyphs((str(item.get("text", "")) for item in items if isinstance(item, dict)), font_path)
    if not missing:
        return None
    used = font_path or find_font("any") or "PIL's built-in font"
    found = "no CJK font found: " if font_path is None and find_font("zh") is None else ""
    return (
        f"warning: {found}the font used, {used}, has no glyph for {missing!r}: "
        f"drawn as boxes in {out_dir}; pass --font PATH to a font that has them, "
        f"or install one (apt-get install {CJK_FONT_PACKAGE})"
    )


def expand_images(specs: Iterable[str]) -> list[str]:
    """Image paths from files, directories (their images, sorted) and glob patterns.

    A plain file is kept whatever its extension; a spec matching nothing
    raises ``FileNotFoundError``.
    """
    out: list[str] = []
    for spec in specs:
        if os.path.isdir(spec):
            out.extend(
                sorted(
                    os.path.join(spec, n)
                    for n in os.listdir(spec)
                    if n.lower().endswith(IMAGE_EXTS) and os.path.isfile(os.path.join(spec, n))
                )
            )
        elif os.path.isfile(spec):
            out.append(spec)
        else:
            matches = sorted(p for p in glob.glob(spec) if os.path.isfile(p) and p.lower().endswith(IMAGE_EXTS))
            if not matches:
                raise FileNotFoundError(f"no image found at {spec!r}")
            out.extend(matches)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="*", metavar="IMAGE|DIR", help="image files or directories of images")
    parser.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:9999")
    parser.add_argument("--pipeline", help=PIPELINE_HELP)
    parser.add_argument(
        "--text", action="append", default=[], help="text input (repeatable), e.g. for an ERNIE pipeline"
    )
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument("--draw", metavar="OUT_DIR", help="save each image with its boxes and text drawn into OUT_DIR")
    parser.add_argument("--font", metavar="PATH", help=FONT_HELP)
    parser.add_argument("--token", help=TOKEN_HELP)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument("--protocol", choices=PROTOCOLS, default="paddle", help=PROTOCOL_HELP)
    parser.add_argument("--rpc-url", metavar="HOST:PORT", help=RPC_URL_HELP)
    parser.add_argument(
        "--version",
        type=_version,
        metavar="N",
        help="send to version N of the pipeline only (POST /NAME/vN/...) instead of letting the server route",
    )
    parser.add_argument(
        "--route-key",
        metavar="KEY",
        help="sticky routing key: requests with one key reach one version of the pipeline (default: the logid)",
    )
    parser.add_argument(
        "--route-header",
        default=ROUTE_HEADER,
        metavar="NAME",
        help=f"header that carries --route-key (default: {ROUTE_HEADER}; a route's config may name another)",
    )


def _version(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"a version is an integer >= 1, got {text!r}")
    return value


def format_result(result: Any) -> list[str]:
    """Human-readable lines for one result: OCR lines, a classification, or JSON."""
    if isinstance(result, list):
        lines = []
        for item in result:
            if isinstance(item, dict) and "text" in item:
                line = f"{item['text']}\t{_score(item.get('score'))}"
                if "label" in item:
                    line += f"\t{item['label']}\t{_score(item.get('label_score'))}"
                lines.append(line)
            else:
                lines.append(json.dumps(item, ensure_ascii=False))
        return lines
    if isinstance(result, dict) and "label" in result:
        return [f"{result['label']}\t{_score(result.get('score'))}"]
    return [json.dumps(result, ensure_ascii=False)]


def _score(score: Any) -> str:
    return f"{score:.4f}" if isinstance(score, (int, float)) else str(score)


def _draw(path: str, data: bytes, result: Any, out_dir: str, font_path: str | None = None) -> str:
    from .draw import draw_ocr  # lazy: PIL drawing only when asked

    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.splitext(os.path.basename(path))[0]
    out = os.path.join(out_dir, f"{stem}.png")
    draw_ocr(data, result if isinstance(result, list) else [], font_path=font_path).save(out)
    return out


def _report(label: str, result: Any, as_json: bool, out: TextIO) -> None:
    out.write(f"== {label}\n")
    if as_json:
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
    else:
        for line in format_result(result):
            out.write(line + "\n")


def main(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        images = expand_images(args.inputs)
    except FileNotFoundError as e:
        err.write(f"error: {e}\n")
        return 1
    if not images and not args.text:
        err.write("error: nothing to send: give IMAGE|DIR arguments or --text\n")
        return 1
    rpc_url = rpc_address(args.rpc_url, args.url)
    problem = protocol_problem(args.protocol, rpc_url) or (font_problem(args.font) if args.draw else None)
    if problem:
        err.write(f"error: {problem}\n")
        return 2
    failed = 0
    token = resolve_token(args.token)
    routing = {"version": args.version, "route_key": args.route_key, "route_header": args.route_header}
    font_warned = False
    with PipelineClient(args.url, timeout=args.timeout, token=token, rpc_url=rpc_url) as client:
        pipeline = args.pipeline
        if pipeline is None:
            try:
                pipeline = default_pipeline(client)
            except ValueError as e:
                err.write(f"error: {e}\n")
                return 2
            if pipeline != DEFAULT_PIPELINE:
                err.write(f"pipeline: {pipeline} (the only one the server runs)\n")
        for path in images:
            try:
                with open(path, "rb") as f:
                    data = f.read()
                result = client.predict(pipeline, image=data, protocol=args.protocol, **routing)[0]
            except (PipelineError, OSError, IndexError) as e:
                failed += 1
                err.write(f"error: {path}: {_describe(e)}\n")
                continue
            _report(path, result, args.json, out)
            if args.draw:
                try:
                    saved = _draw(path, data, result, args.draw, args.font)
                except OSError as e:
                    failed += 1
                    err.write(f"error: {path}: cannot draw: {e}\n")
                    continue
                err.write(f"drew {saved}\n")
                if not font_warned:
                    warning = cjk_font_warning(result, args.font, args.draw)
                    if warning:
                        err.write(warning + "\n")
                        font_warned = True
        for text in args.text:
            try:
                result = client.predict(pipeline, text=text, protocol=args.protocol, **routing)[0]
            except (PipelineError, IndexError) as e:
                failed += 1
                err.write(f"error: text {text[:40]!r}: {_describe(e)}\n")
                continue
            _report(text, result, args.json, out)
    return 1 if failed else 0


def _describe(e: Exception) -> str:
    if isinstance(e, PipelineError):
        return str(e) if e.status else f"no answer (status 0): {e.message}"
    if isinstance(e, IndexError):
        return "server returned no result"
    return str(e)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="batchline predict", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return parser


if __name__ == "__main__":
    sys.exit(main(build_parser().parse_args()))
