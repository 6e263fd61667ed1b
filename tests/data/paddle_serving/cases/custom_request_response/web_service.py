# batchline behaviour case: a custom RequestOp (unpack_request_package) and ResponseOp
# (pack_response_package) served through PipelineServer (set_response_op,
# prepare_server, run_server), as Paddle Serving's imdb_model_ensemble example does.
from paddle_serving_server.pipeline import Op, PipelineServer, RequestOp, ResponseOp
from paddle_serving_server.pipeline.channel import ChannelDataErrcode
from paddle_serving_server.pipeline.proto import pipeline_service_pb2


class TextRequestOp(RequestOp):
    def init_op(self):
        self.prefix = "req:"

    def unpack_request_package(self, request):
        data = {}
        for idx, key in enumerate(request.key):
            data[key] = request.value[idx]
        if "text" not in data:
            return {}, request.logid, 3003, "custom request op: no text key"
        data["text"] = self.prefix + data["text"]
        return data, request.logid, None, ""


class CountOp(Op):
    def preprocess(self, input_dicts, data_id, log_id):
        ((_, data),) = input_dicts.items()
        words = data["text"].split()
        return {"text": data["text"], "words": str(len(words))}, False, None, ""


class TextResponseOp(ResponseOp):
    def pack_response_package(self, channeldata):
        resp = pipeline_service_pb2.Response()
        resp.err_no = channeldata.error_code
        if resp.err_no == ChannelDataErrcode.OK.value:
            feed = channeldata.parse()
            for name in sorted(feed):
                resp.key.append("out_" + name)
                resp.value.append("<{}>".format(feed[name]))
            resp.err_msg = "custom response op"
        elif resp.err_no == ChannelDataErrcode.PRODUCT_ERROR.value:
            resp.err_no = channeldata.prod_error_code
            resp.err_msg = "custom: " + channeldata.prod_error_info
        else:
            resp.err_msg = channeldata.error_info
        return resp


read_op = TextRequestOp()
count_op = CountOp(name="count", input_ops=[read_op])
response_op = TextResponseOp(input_ops=[count_op])

server = PipelineServer(name="custom")
server.set_response_op(response_op)
server.prepare_server("config.yml")
server.run_server()
