"""Paddle Serving 0.9's ``paddle_serving_server``, as batchline provides it to a ``web_service.py``."""
