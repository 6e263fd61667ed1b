"""The null op on Ray Serve as its docs show it: an HTTP deployment with
``@serve.batch`` (max batch 32, 1 ms wait), one replica per core, behind Ray
Serve's HTTP proxy. Runs in the Ray Serve environment; starts its own local
Ray (``ray.init``) and serves until killed.

    python -m bench.peers.null_rayserve --port 8000 --workers 2
    POST / {"text": "..."} -> {"length": n}
"""

from __future__ import annotations

import argparse
import time

import ray
from ray import serve
from starlette.requests import Request


@serve.deployment
class Length:
    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.001)
    async def lengths(self, texts: list[str]) -> list[int]:
        return [len(t) for t in texts]

    async def __call__(self, request: Request) -> dict:
        body = await request.json()
        return {"length": await self.lengths(body["text"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    ray.init(include_dashboard=False)
    serve.start(http_options={"host": "127.0.0.1", "port": args.port})
    serve.run(Length.options(num_replicas=args.workers, max_ongoing_requests=64).bind(), route_prefix="/")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
