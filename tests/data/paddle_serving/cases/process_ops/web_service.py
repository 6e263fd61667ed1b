# batchline behaviour case: an Op with a model (uci fit-a-line, 13 floats -> price);
# thread_ops runs it with is_thread_op: True, process_ops with is_thread_op: False.
import numpy as np
from paddle_serving_server.web_service import Op, WebService


class UciOp(Op):
    def init_op(self):
        self.separator = ","

    def preprocess(self, input_dicts, data_id, log_id):
        ((_, input_dict),) = input_dicts.items()
        rows = input_dict["x"].split(";")
        x = np.array([[float(v) for v in row.split(self.separator)] for row in rows], dtype="float32")
        return {"x": x.reshape(-1, 13)}, False, None, ""

    def postprocess(self, input_dicts, fetch_dict, data_id, log_id):
        return {"price": str(fetch_dict["price"]), "rows": str(len(fetch_dict["price"]))}, None, ""


class UciService(WebService):
    def get_pipeline_response(self, read_op):
        return UciOp(name="uci", input_ops=[read_op])


uci_service = UciService(name="uci")
uci_service.prepare_pipeline_config("config.yml")
uci_service.run_service()
