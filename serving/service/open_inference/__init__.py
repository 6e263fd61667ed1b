"""The Open Inference Protocol (KServe v2) without its transport: what the HTTP routes and
the gRPC service share. The mapping is documented in docs/protocols.md."""
