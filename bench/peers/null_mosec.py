"""The null op on mosec (Rust HTTP front, Python worker processes) as its
docs show it: one Worker stage, dynamic batching (max batch 32, 1 ms wait),
one worker process per core. Runs in the mosec environment.

    python -m bench.peers.null_mosec --port 8000 --workers 2
    POST /inference {"text": "..."} -> {"length": n}
"""

from __future__ import annotations

import sys

from mosec import Server, Worker


class Length(Worker):
    def forward(self, data: list[dict]) -> list[dict]:
        return [{"length": len(item["text"])} for item in data]


def main() -> None:
    workers = 2
    if "--workers" in sys.argv:  # mosec parses the rest of argv itself (--port ...)
        i = sys.argv.index("--workers")
        workers = int(sys.argv[i + 1])
        del sys.argv[i : i + 2]
    server = Server()
    server.append_worker(Length, num=workers, max_batch_size=32, max_wait_time=1)
    server.run()


if __name__ == "__main__":
    main()
