"""gRPC front ends: Paddle Serving's pipeline service and the Open Inference Protocol, on ``rpc_port``."""
