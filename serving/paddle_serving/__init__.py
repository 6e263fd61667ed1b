"""Paddle Serving 0.9 compatibility: what its users' ``web_service.py`` files import, run on batchline."""
