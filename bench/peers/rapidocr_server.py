"""An OCR server a user would write around RapidOCR: Flask + waitress and a
pool of RapidOCR instances, each used by one request at a time (a queue of
instances). A benchmark peer, run inside the bench's RapidOCR virtual
environment (bench/lib/rapidocr_venv.py).

Same protocol as batchline and bench/peers/flask_paddleocr.py, plus what it
runs on:

    POST /ocr/prediction  {"key": ["image"], "value": ["<base64>"]}
    -> {"err_no": 0, "err_msg": "", "key": ["result"], "value": ["[{text, score, box}]"]}
    GET  /health/ready
    GET  /peer/info       engine, versions, pool layout, precision per model

    <venv>/bin/python bench/peers/rapidocr_server.py --engine openvino --precision fp32 \
        --pool 1 --threads 2 --port 9997
"""

from __future__ import annotations

import argparse
import base64
import json
import queue
import sys
from typing import Any

# rapidocr_build is this folder's: run by path, Python puts the script's folder first on sys.path
# (the RapidOCR venv has no batchline, so it cannot be `python -m bench.peers...`)
from rapidocr_build import (
    DET_RESIZES,
    ENGINES,
    PRECISIONS,
    make_rapidocr,
    precisions,
    read_page,
    versions,
)


def create_app(pool: queue.Queue, info: dict, name: str = "ocr") -> Any:
    import cv2
    import numpy as np
    from flask import Flask, jsonify, request

    app = Flask(__name__)

    @app.get("/health/ready")
    @app.get("/health/live")
    def health() -> str:
        return "ok"

    @app.get("/peer/info")
    def peer_info() -> Any:
        return jsonify(info)

    @app.post(f"/{name}/prediction")
    def prediction() -> Any:
        body = request.get_json(force=True, silent=True) or {}
        try:
            data = base64.b64decode(body["value"][0])
            img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
            if img is None:
                raise ValueError("not an image")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            return jsonify({"err_no": 400, "err_msg": f"bad input: {exc}"}), 400
        ocr = pool.get()  # one request per instance at a time
        try:
            lines = read_page(ocr, img)
        finally:
            pool.put(ocr)
        return jsonify(
            {"err_no": 0, "err_msg": "", "key": ["result"], "value": [json.dumps(lines, ensure_ascii=False)]}
        )

    return app


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9997)
    ap.add_argument("--engine", choices=sorted(ENGINES), default="openvino")
    ap.add_argument("--precision", choices=PRECISIONS, default="default")
    ap.add_argument("--pool", type=int, default=1, help="RapidOCR instances")
    ap.add_argument("--threads", type=int, default=2, help="math threads per instance (per model)")
    ap.add_argument("--no-pinning", action="store_true", help="OpenVINO: ENABLE_CPU_PINNING off")
    ap.add_argument("--det-resize", choices=DET_RESIZES, default="paddleocr")
    ap.add_argument("--http-threads", type=int, default=16, help="waitress threads")
    args = ap.parse_args()
    from waitress import serve

    pool: queue.Queue = queue.Queue()
    instances = [
        make_rapidocr(args.engine, args.precision, args.threads, not args.no_pinning, args.det_resize)
        for _ in range(args.pool)
    ]
    for ocr in instances:
        pool.put(ocr)
    info = {
        "engine": args.engine,
        "precision": args.precision,
        "precisions": precisions(instances[0], args.engine),
        "pool": args.pool,
        "threads": args.threads,
        "pinning": not args.no_pinning,
        "det_resize": args.det_resize,
        "versions": versions(args.engine),
    }
    serve(create_app(pool, info), host=args.host, port=args.port, threads=args.http_threads, ident="rapidocr-peer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
