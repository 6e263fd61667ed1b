# batchline behaviour case: a BERT text service on Paddle Serving's ChineseBertReader, used the way
# Paddle Serving's BERT pipeline example uses it (the request's keys "0", "1", ... each a text; the
# reader's feed lists reshaped to [1, max_seq_len, 1] and stacked; the fetches answered as str()).
import numpy as np
from paddle_serving_app.reader import ChineseBertReader
from paddle_serving_server.web_service import Op, WebService


class BertOp(Op):
    def init_op(self):
        self.reader = ChineseBertReader({"vocab_file": "vocab.txt", "max_seq_len": 128})

    def preprocess(self, input_dicts, data_id, log_id):
        ((_, input_dict),) = input_dicts.items()
        feeds = []
        for i in range(len(input_dict)):
            feed = self.reader.process(input_dict[str(i)].encode("utf-8"))
            feeds.append({key: np.array(value).reshape((1, len(value), 1)) for key, value in feed.items()})
        return {key: np.concatenate([f[key] for f in feeds], axis=0) for key in feeds[0]}, False, None, ""

    def postprocess(self, input_dicts, fetch_dict, data_id, log_id):
        return {name: str(fetch_dict[name]) for name in ("pooled_output", "sequence_output")}, None, ""


class BertService(WebService):
    def get_pipeline_response(self, read_op):
        return BertOp(name="bert", input_ops=[read_op])


service = BertService(name="bert")
service.prepare_pipeline_config("config.yml")
service.run_service()
