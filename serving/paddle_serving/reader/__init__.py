"""``paddle_serving_app.reader`` for batchline: Paddle Serving 0.9's image and OCR pre/post-processing, written
anew (numpy and OpenCV; pyclipper for DB's unclip), same arguments, defaults, dtypes and shapes, so users'
``web_service.py`` files run unchanged. Held to the real classes by recorded cases
(tests/unit/test_paddle_serving_reader.py, recorded by bench/paddle_serving/record_reader_cases.py).

Where ours differs on purpose: invalid arguments raise ``ValueError`` where the real ones assert;
``URL2Image`` fetches only http(s) URLs, with a timeout; ``ResizeByFactor`` lets an OpenCV error propagate
(the real one prints and exits the process); ``OCRReader`` falls back to the installed copy of
``ppocr_keys_v1.txt`` when its default ``./ppocr_keys_v1.txt`` is missing, and takes ``width_from_height=True``
for PP-OCRv3/v4 rec models (height 48: see ocr_reader.py).

``ChineseBertReader`` (Paddle Serving's BERT pipeline example) and the BERT tokenization under it
(``paddle_serving_app.reader.tokenization``: ``FullTokenizer``, ``BasicTokenizer``, ``WordpieceTokenizer``) are
held to the real ones the same way (tests/unit/test_paddle_serving_bert_reader.py); without a ``vocab_file`` it
refuses, where the real one downloads a vocabulary.

Left out (text, video, segmentation and drawing readers; none is used by an OCR, image or BERT pipeline
example): LACReader, SentaReader, the IMDB and batching modules, the tokenizers with sentencepiece, the PP-TSN video
transforms (VideoDecoder, Sampler, Scale, TenCrop, Image2Array, Normalization), SegPostprocess,
RCNNPostprocess and BlazeFacePostprocess. Importing one of those names fails with ImportError."""

from serving.paddle_serving.reader.bert import ChineseBertReader
from serving.paddle_serving.reader.boxes import FilterBoxes, GetRotateCropImage, SortedBoxes
from serving.paddle_serving.reader.color import BGR2RGB, RGB2BGR, DetectionBGR2RGB
from serving.paddle_serving.reader.compose import DetectionSequential, Sequential
from serving.paddle_serving.reader.db_postprocess import DBPostProcess
from serving.paddle_serving.reader.decode import (
    Base64ToImage,
    DetectionFile2Image,
    File2Image,
    String2Image,
    URL2Image,
)
from serving.paddle_serving.reader.image_reader import ImageReader
from serving.paddle_serving.reader.layout import DetectionPadStride, DetectionTranspose, PadStride, Transpose
from serving.paddle_serving.reader.normalize import DetectionNormalize, Div, Normalize
from serving.paddle_serving.reader.ocr_reader import OCRReader
from serving.paddle_serving.reader.resize import CenterCrop, DetectionResize, Resize, ResizeByFactor

__all__ = [
    "BGR2RGB",
    "Base64ToImage",
    "CenterCrop",
    "ChineseBertReader",
    "DBPostProcess",
    "DetectionBGR2RGB",
    "DetectionFile2Image",
    "DetectionNormalize",
    "DetectionPadStride",
    "DetectionResize",
    "DetectionSequential",
    "DetectionTranspose",
    "Div",
    "File2Image",
    "FilterBoxes",
    "GetRotateCropImage",
    "ImageReader",
    "Normalize",
    "OCRReader",
    "PadStride",
    "RGB2BGR",
    "Resize",
    "ResizeByFactor",
    "Sequential",
    "SortedBoxes",
    "String2Image",
    "Transpose",
    "URL2Image",
]
