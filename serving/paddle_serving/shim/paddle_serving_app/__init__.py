"""Paddle Serving 0.9's ``paddle_serving_app``, as batchline provides it: its readers."""
