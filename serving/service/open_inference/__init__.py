"""The Open Inference Protocol (KServe v2, Triton's protocol) without its
transport: what the HTTP routes (:mod:`serving.http.routes.v2`) and the gRPC
service (:mod:`serving.grpc.inference_service`) share.

* :mod:`.model`: a pipeline as a model (name, versions, tensors offered);
* :mod:`.tensors`: the binary form of BYTES and FP32 tensors;
* :mod:`.request`: an inference request -> the HTTP API's ParsedRequest, every
  count checked before an element is read;
* :mod:`.answer`: a request's results -> output tensors;
* :mod:`.infer`: one request through the prediction routes, as the HTTP API runs it.

The mapping is documented in docs/protocols.md."""
