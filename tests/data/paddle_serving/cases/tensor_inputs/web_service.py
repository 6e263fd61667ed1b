# batchline behaviour case: inputs in Paddle Serving's tensor format (PipelineClient's
# pack_tensor_format=True, use_tensor_bytes=True; a JSON body's "tensors"). "show" (an op
# without a model) answers what its preprocess received for each key: the type, and for
# an array its dtype, shape and elements.
from paddle_serving_server.web_service import Op, WebService
import numpy as np


def describe(value):
    if isinstance(value, np.ndarray):
        return "ndarray {} {} {!r}".format(value.dtype, value.shape, value.tolist())
    return "{} {!r}".format(type(value).__name__, value)


class ShowOp(Op):
    def preprocess(self, input_dicts, data_id, log_id):
        ((_, input_dict),) = input_dicts.items()
        return {key: describe(value) for key, value in input_dict.items()}, False, None, ""


class TensorService(WebService):
    def get_pipeline_response(self, read_op):
        return ShowOp(name="show", input_ops=[read_op])


service = TensorService(name="tensors")
service.prepare_pipeline_config("config.yml")
service.run_service()
