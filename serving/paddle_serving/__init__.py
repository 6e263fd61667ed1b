"""Paddle Serving 0.9's pipeline Python API on batchline's engine: a user's ``web_service.py``
(``WebService``, ``Op``, ``RequestOp``, ``ResponseOp``, ``PipelineServer``) runs unchanged."""
