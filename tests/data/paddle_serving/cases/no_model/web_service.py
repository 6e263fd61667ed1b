# batchline behaviour case: ops without a model. "upper" overrides preprocess only
# (its dict goes through the skipped process stage to the default postprocess);
# "show" (after it) reports what its preprocess and postprocess receive.
from paddle_serving_server.web_service import Op, WebService


class UpperOp(Op):
    def preprocess(self, input_dicts, data_id, log_id):
        ((_, input_dict),) = input_dicts.items()
        return {key: value.upper() for key, value in input_dict.items()}, False, None, ""


class ShowOp(Op):
    def preprocess(self, input_dicts, data_id, log_id):
        ((name, input_dict),) = input_dicts.items()
        out = dict(input_dict)
        out["pre_saw"] = "{}:{}".format(name, sorted(input_dict.keys()))
        return out, False, None, ""

    def postprocess(self, input_dicts, fetch_data, data_id, log_id):
        out = {key: str(value) for key, value in fetch_data.items()}
        out["post_input_ops"] = str(sorted(input_dicts.keys()))
        out["post_fetch_type"] = type(fetch_data).__name__
        return out, None, ""


class NoModelService(WebService):
    def get_pipeline_response(self, read_op):
        upper = UpperOp(name="upper", input_ops=[read_op])
        return ShowOp(name="show", input_ops=[upper])


service = NoModelService(name="nomodel")
service.prepare_pipeline_config("config.yml")
service.run_service()
