"""The null op in plain Flask + waitress, no batching: our stack's floor (what
Flask and waitress alone spend per request). Project environment.

    python -m bench.peers.null_flask --port 8000
    POST /null {"text": "..."} -> {"length": n}
"""

from __future__ import annotations

import argparse

from flask import Flask, jsonify, request


def create_app() -> Flask:
    app = Flask("null-flask")

    @app.post("/null")
    @app.post("/null/predict")  # behind batchline's HTTP server, which takes bodies only on predict routes
    def null():  # type: ignore[no-untyped-def]
        return jsonify(length=len(request.get_json()["text"]))

    return app


def main() -> None:
    from waitress import serve

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=16, help="waitress threads (as batchline's worker_num)")
    args = parser.parse_args()
    serve(create_app(), host="127.0.0.1", port=args.port, threads=args.threads, ident="null-flask")


if __name__ == "__main__":
    main()
