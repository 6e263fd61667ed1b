# batchline behaviour case: preprocess returns is_skip_process=True when the request
# has a key "skip": the model does not run and postprocess gets preprocess's output as
# its fetch data. Without "skip" the uci model runs.
import numpy as np
from paddle_serving_server.web_service import Op, WebService


class MaybeSkipOp(Op):
    def preprocess(self, input_dicts, data_id, log_id):
        ((_, input_dict),) = input_dicts.items()
        if "skip" in input_dict:
            return {"skipped": "yes", "note": input_dict["skip"]}, True, None, ""
        x = np.array([float(v) for v in input_dict["x"].split(",")], dtype="float32")
        return {"x": x.reshape(1, 13)}, False, None, ""

    def postprocess(self, input_dicts, fetch_data, data_id, log_id):
        out = {"fetch_keys": str(sorted(fetch_data.keys())), "input_keys": str(sorted(input_dicts.keys()))}
        for key, value in fetch_data.items():
            out[key] = str(value)
        return out, None, ""


class SkipService(WebService):
    def get_pipeline_response(self, read_op):
        return MaybeSkipOp(name="maybe_skip", input_ops=[read_op])


service = SkipService(name="skip")
service.prepare_pipeline_config("config.yml")
service.run_service()
