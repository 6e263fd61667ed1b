# A Paddle Serving service of two ops without a model, as a user writes one; the tests copy this
# folder, set dag.is_thread_op and batch_size in config.yml, and serve it with batchline.
import base64
import os

import numpy as np
from paddle_serving_server.web_service import Op, WebService


class UpperOp(Op):
    def init_op(self):
        self.pid = os.getpid()  # which worker answered: process ops each have their own
        self.pending = 0  # preprocessed, not yet postprocessed: a batch's size at its first postprocess

    def preprocess(self, input_dicts, data_id, log_id):
        ((_, d),) = input_dicts.items()
        if d.get("fail") == "pre":
            return None, False, 61, "refused in preprocess"
        if d.get("fail") == "raise":
            raise ValueError("cannot read it")
        self.pending += 1
        if "image" in d:  # numpy 1's fromstring on bytes, as half of Paddle Serving's scripts decode images
            return {"size": str(np.fromstring(base64.b64decode(d["image"]), np.uint8).size)}, False, None, ""
        if "x" in d:  # a tensor (PipelineClient's pack_tensor_format, a JSON body's "tensors"): an array
            return {"text": "{} {} {:g}".format(d["x"].dtype, d["x"].shape, d["x"].sum())}, False, None, ""
        return {"text": d["text"].upper()}, False, None, ""

    def postprocess(self, input_dicts, fetch_dict, data_id, log_id):
        ((_, d),) = input_dicts.items()
        batch, self.pending = self.pending, self.pending - 1
        if d.get("fail") == "post":
            return {}, 62, "refused in postprocess"
        out = {"text": fetch_dict.get("text", ""), "batch": str(batch), "pid": str(self.pid)}
        if "size" in fetch_dict:
            out["size"] = fetch_dict["size"]
        return out, None, ""


class ExclaimOp(Op):
    def postprocess(self, input_dicts, fetch_dict, data_id, log_id):
        out = dict(fetch_dict)
        out["text"] = out["text"] + "!"
        return out, None, ""


class Service(WebService):
    def get_pipeline_response(self, read_op):
        upper = UpperOp(name="upper", input_ops=[read_op])
        return ExclaimOp(name="exclaim", input_ops=[upper])


service = Service(name="echo")
service.prepare_pipeline_config("config.yml")
service.run_service()
