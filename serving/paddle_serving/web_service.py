"""Paddle Serving 0.9's ``PipelineServer`` and ``WebService``. In a user's ``web_service.py``
they describe the service (the response op, hence the graph, and the config); ``run_server``
/ ``run_service`` hand that description to batchline, which serves it
(:mod:`serving.paddle_serving.service_file`): nothing of the script runs past them, as
nothing does in Paddle Serving, where they never return."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

from serving.paddle_serving.operator import Op, RequestOp, ResponseOp


@dataclass
class ServiceDescription:
    """What a script declared: the service's name (its HTTP path), the response op and the config."""

    name: str | None
    response_op: ResponseOp
    yml_file: str | None
    yml_dict: dict | None


class Described(BaseException):
    """Raised by ``run_server`` while a script is read: the service it describes.
    A BaseException, so a script's own ``except Exception`` does not swallow it."""

    def __init__(self, description: ServiceDescription):
        super().__init__("the service is described")
        self.description = description


#: set while batchline reads a script (per thread and task, so nothing global changes)
READING: contextvars.ContextVar[bool] = contextvars.ContextVar("paddle_serving_reading", default=False)


class PipelineServer:
    def __init__(self, name: str | None = None):
        self._name = name
        self._response_op: ResponseOp | None = None
        self._yml_file: str | None = None
        self._yml_dict: dict | None = None

    def set_response_op(self, response_op: ResponseOp) -> None:
        if not isinstance(response_op, ResponseOp):
            raise TypeError(f"the response op must be a ResponseOp, got {type(response_op).__name__}")
        self._response_op = response_op

    def prepare_server(self, yml_file: str | None = None, yml_dict: dict | None = None) -> None:
        if yml_file is None and yml_dict is None:
            raise ValueError("prepare_server needs yml_file or yml_dict")
        self._yml_file, self._yml_dict = yml_file, yml_dict

    def run_server(self) -> None:
        if self._response_op is None:
            raise RuntimeError("set_response_op() must be called before run_server()")
        if self._yml_file is None and self._yml_dict is None:
            raise RuntimeError("prepare_server() must be called before run_server()")
        description = ServiceDescription(self._name, self._response_op, self._yml_file, self._yml_dict)
        if READING.get():
            raise Described(description)
        raise RuntimeError(
            "this script is a Paddle Serving service: serve it with `batchline serve <script>.py` "
            "(batchline runs it, its ops and its config.yml)"
        )


class WebService:
    def __init__(self, name: str = "default_service"):
        self.name = name
        self._server = PipelineServer(self.name)

    def get_pipeline_response(self, read_op: RequestOp) -> Op | None:
        return None

    def prepare_pipeline_config(self, yml_file: str | None = None, yml_dict: dict | None = None) -> None:
        read_op = RequestOp()
        last_op = self.get_pipeline_response(read_op)
        if not isinstance(last_op, Op):
            raise ValueError(
                "The return value type of `get_pipeline_response` function is not Op type, "
                "please check function `get_pipeline_response`."
            )
        self._server.set_response_op(ResponseOp(input_ops=[last_op]))
        self._server.prepare_server(yml_file=yml_file, yml_dict=yml_dict)

    def run_service(self) -> None:
        self._server.run_server()
