"""The request core beneath every door (:mod:`.core`), and what it is made of:
the limits of a request (:mod:`.limits`, :mod:`.body_budget`, :mod:`.json_budget`),
its parsing (:mod:`.parse`) and decoding plan (:mod:`.decode`), waiting for its
answers (:mod:`.waiting`), the documents of answers and failures (:mod:`.encode`,
:mod:`.error_body`), tokens (:mod:`.auth`, :mod:`.exposure`) and the Open
Inference Protocol without its transport (:mod:`.open_inference`).

No web framework and no protocol: the doors (``serving.http``, ``serving.grpc``,
the Ray ingress) parse their wire formats and call the core."""
