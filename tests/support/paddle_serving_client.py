"""Paddle Serving 0.9's own ``PipelineClient``, run against our gRPC port.

``paddle_serving_server`` 0.9.0 (the last release) cannot be installed next to
batchline: it pins grpcio<=1.33.2, Flask<2 and Werkzeug 1.0.1. So its wheel is
fetched from the package registry without dependencies (``pip download
--no-deps``, cached under the user's cache directory) and only what its
``PipelineClient`` imports is put on a child process's path: the wheel's
``pipeline/`` package (its ``pipeline_client.py`` and the generated
``pipeline_service_pb2`` of Paddle Serving's own ``.proto``), ``util.py`` and
``env.py``, with empty package ``__init__`` files (the real ones import the whole
server). Its generated code predates protobuf 4, so the child runs protobuf's
pure-Python implementation. Nothing of it is committed here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from typing import Any

WHEEL = "paddle_serving_server==0.9.0"
CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "batchline-tests")
WHEEL_FILES = ("paddle_serving_server/util.py", "paddle_serving_server/env.py", "paddle_serving_server/pipeline/")

# run in the child: the feeds and predict's keyword arguments come as JSON on stdin
CHILD = r"""
import json, sys
from paddle_serving_server.pipeline.pipeline_client import PipelineClient
job = json.load(sys.stdin)
client = PipelineClient()
client.connect([job["endpoint"]])
answers = []
for feed in job["feeds"]:
    resp = client.predict(feed_dict=feed, fetch=job.get("fetch"), **job["kwargs"])
    answers.append({"err_no": resp.err_no, "err_msg": resp.err_msg, "key": list(resp.key), "value": list(resp.value)})
sys.stdout.write("\n@@ANSWERS@@" + json.dumps(answers))
"""


def client_root() -> str:
    """A directory holding the client's modules (made once, then reused)."""
    root = os.path.join(CACHE, "paddle_serving_client_0.9.0")
    if os.path.exists(os.path.join(root, "ready")):
        return root
    wheels = os.path.join(CACHE, "wheels")
    os.makedirs(wheels, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", wheels, WHEEL], check=True)
    (wheel,) = [f for f in os.listdir(wheels) if f.startswith("paddle_serving_server-0.9.0")]
    shutil.rmtree(root, ignore_errors=True)
    with zipfile.ZipFile(os.path.join(wheels, wheel)) as zf:
        for name in zf.namelist():
            if name.startswith(WHEEL_FILES):
                zf.extract(name, root)
    for package in ("paddle_serving_server", "paddle_serving_server/pipeline"):
        with open(os.path.join(root, package, "__init__.py"), "w", encoding="utf-8"):
            pass
    with open(os.path.join(root, "ready"), "w", encoding="utf-8"):
        pass
    return root


def predict(
    endpoint: str, feeds: list[dict[str, Any]], *, fetch: list[str] | None = None, **kwargs: Any
) -> list[dict[str, Any]]:
    """Each feed dict through ``PipelineClient().predict`` (``connect([endpoint])``, "host:port"):
    the responses as dicts of err_no, err_msg, key and value."""
    env = dict(os.environ, PYTHONPATH=client_root(), PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
    job = {"endpoint": endpoint, "feeds": feeds, "fetch": fetch, "kwargs": kwargs}
    out = subprocess.run(
        [sys.executable, "-c", CHILD], input=json.dumps(job), capture_output=True, text=True, env=env, timeout=120
    )
    if out.returncode != 0 or "@@ANSWERS@@" not in out.stdout:
        raise RuntimeError(f"PipelineClient failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.rsplit("@@ANSWERS@@", 1)[1])
