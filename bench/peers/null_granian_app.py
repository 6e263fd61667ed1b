"""batchline's own Flask app (``serving.http.app.create_app``) on the null-op
pipeline, for a WSGI server other than waitress to serve, e.g. granian:

    granian --interface wsgi --factory --workers 1 --blocking-threads 64 \
        --host 127.0.0.1 --port 8000 bench.peers.null_granian_app:app

Each granian worker process calls :func:`app`, so with ``--workers 2`` each
has its own pipeline: its own engine and batcher, batching only the requests
that worker received. Runs in the granian environment, which sees the
project's packages (bench/lib/venvs.py, ``system_site``). What waitress's
front adds in ``batchline serve`` (slow-client limits, body limits before
buffering, drain on SIGTERM) is not here: this measures the HTTP server alone.
"""

from __future__ import annotations

from typing import Any


def app() -> Any:
    from bench.lib.null_op import null_config
    from serving.batching.live_pipelines import PipelineRepository
    from serving.config import parse_config
    from serving.config.file_set import repository_of
    from serving.http.app import create_app

    repository = PipelineRepository(repository_of(parse_config(null_config())), warmup=True)
    repository.start()
    return create_app(repository)


if __name__ == "__main__":
    raise SystemExit("serve it with a WSGI server: granian --interface wsgi --factory bench.peers.null_granian_app:app")
