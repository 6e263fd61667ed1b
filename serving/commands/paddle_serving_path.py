"""Print the folder that holds batchline's ``paddle_serving_server`` and ``paddle_serving_app``:
put it on ``PYTHONPATH`` to run Paddle Serving's own clients (``pipeline_rpc_client.py``
imports ``PipelineClient`` from ``paddle_serving_server.pipeline``) as they are:
``PYTHONPATH="$(batchline paddle-serving-path)" python pipeline_rpc_client.py``.
``batchline serve web_service.py`` needs nothing of the sort: it puts the folder there itself."""

from __future__ import annotations

import argparse
import sys

from serving.paddle_serving.service_file import SHIM_DIR


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def main(args: argparse.Namespace) -> int:
    sys.stdout.write(SHIM_DIR + "\n")
    return 0
