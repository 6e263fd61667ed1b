"""The request core beneath every door (:mod:`.core`) and what it is made of. No web
framework and no protocol: the doors (``serving.http``, ``serving.grpc``, the Ray
ingress) parse their wire formats and call the core."""
