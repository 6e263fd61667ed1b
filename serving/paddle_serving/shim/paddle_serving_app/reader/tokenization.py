from serving.paddle_serving.reader.bert import (  # noqa: F401 - Paddle Serving's BERT tokenization module
    BasicTokenizer,
    FullTokenizer,
    WordpieceTokenizer,
    convert_to_unicode,
    load_vocab,
    whitespace_tokenize,
)
