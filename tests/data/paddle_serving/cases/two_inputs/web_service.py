# batchline behaviour case: an op with two input ops. "left" and "right" both read
# the request; "join" (input_ops=[left, right]) gets input_dicts with both, keyed
# by op name. "right" has the uci model.
import numpy as np
from paddle_serving_server.web_service import Op, WebService


class LeftOp(Op):
    def preprocess(self, input_dicts, data_id, log_id):
        ((_, input_dict),) = input_dicts.items()
        return {"left": "L:" + input_dict["a"]}, False, None, ""


class RightOp(Op):
    def preprocess(self, input_dicts, data_id, log_id):
        ((_, input_dict),) = input_dicts.items()
        x = np.array([float(v) for v in input_dict["x"].split(",")], dtype="float32")
        return {"x": x.reshape(1, 13)}, False, None, ""

    def postprocess(self, input_dicts, fetch_dict, data_id, log_id):
        return {"right": str(fetch_dict["price"])}, None, ""


class JoinOp(Op):
    def preprocess(self, input_dicts, data_id, log_id):
        joined = {"ops": str(list(input_dicts.keys()))}
        for name, data in input_dicts.items():
            for key, value in data.items():
                joined["{}.{}".format(name, key)] = value
        return joined, False, None, ""


class JoinService(WebService):
    def get_pipeline_response(self, read_op):
        left = LeftOp(name="left", input_ops=[read_op])
        right = RightOp(name="right", input_ops=[read_op])
        return JoinOp(name="join", input_ops=[left, right])


service = JoinService(name="join")
service.prepare_pipeline_config("config.yml")
service.run_service()
