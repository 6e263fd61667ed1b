"""``GeneralModelConfig``, ``FeedVar`` and ``FetchVar`` of Paddle Serving's general_model_config.proto: the
serving model folder's ``serving_server_conf.prototxt``, as scripts read it
(``text_format.Merge(text, general_model_config_pb2.GeneralModelConfig())``)."""

from serving.protos import model_config_messages

_messages = model_config_messages()
GeneralModelConfig = _messages.GeneralModelConfig
FeedVar = _messages.FeedVar
FetchVar = _messages.FetchVar

__all__ = ["FeedVar", "FetchVar", "GeneralModelConfig"]
