"""The null op on LitServe (FastAPI/uvicorn front, worker processes) as its
docs show it: batching on (max batch 32, 1 ms timeout), one worker per core
on CPU. Runs in the LitServe environment.

    python -m bench.peers.null_litserve --port 8000 --workers 2
    POST /predict {"text": "..."} -> {"length": n}
"""

from __future__ import annotations

import argparse

import litserve as ls


class LengthAPI(ls.LitAPI):
    def setup(self, device):  # type: ignore[no-untyped-def]
        pass

    def decode_request(self, request):  # type: ignore[no-untyped-def]
        return request["text"]

    def batch(self, inputs):  # type: ignore[no-untyped-def]
        return list(inputs)

    def predict(self, x):  # type: ignore[no-untyped-def]
        return [len(t) for t in x]

    def unbatch(self, output):  # type: ignore[no-untyped-def]
        return list(output)

    def encode_response(self, output):  # type: ignore[no-untyped-def]
        return {"length": output}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    server = ls.LitServer(
        LengthAPI(max_batch_size=32, batch_timeout=0.001),
        accelerator="cpu",
        workers_per_device=args.workers,
    )
    server.run(host="127.0.0.1", port=args.port, generate_client_file=False)


if __name__ == "__main__":
    main()
