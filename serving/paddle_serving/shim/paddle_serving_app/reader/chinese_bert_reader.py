from serving.paddle_serving.reader.bert import ChineseBertReader  # noqa: F401 - the module path some examples import from
