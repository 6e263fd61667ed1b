# batchline behaviour case: product errors (prod_errcode, prod_errinfo) returned from
# preprocess and from postprocess, a zero prod_errcode, an exception, and a non-str
# value in the response dict. No model: the op's process stage is skipped.
from paddle_serving_server.web_service import Op, WebService


class CheckOp(Op):
    def preprocess(self, input_dicts, data_id, log_id):
        ((_, input_dict),) = input_dicts.items()
        mode = input_dict.get("mode", "")
        if mode == "pre":
            return {}, False, 1001, "bad input in preprocess"
        if mode == "zero":
            return {}, False, 0, "zero errcode from preprocess"
        if mode == "raise":
            raise ValueError("preprocess raised on purpose")
        return {"mode": mode, "text": input_dict.get("text", "")}, False, None, ""

    def postprocess(self, input_dicts, fetch_data, data_id, log_id):
        mode = fetch_data["mode"]
        if mode == "post":
            return {}, 2002, "bad result in postprocess"
        if mode == "post_raise":
            raise RuntimeError("postprocess raised on purpose")
        if mode == "nonstr":
            return {"length": len(fetch_data["text"])}, None, ""
        return {"echo": fetch_data["text"], "mode": mode}, None, ""


class CheckService(WebService):
    def get_pipeline_response(self, read_op):
        return CheckOp(name="check", input_ops=[read_op])


service = CheckService(name="check")
service.prepare_pipeline_config("config.yml")
service.run_service()
