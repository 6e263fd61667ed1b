"""PaddleOCR 2.10's pre/post-processing for the OCR ops, ported so that no Paddle is needed.

PaddleOCR's own modules (``ppocr.data``, ``ppocr.postprocess``, ``tools.infer``)
import ``paddle`` (some 700 MiB) even for their numpy/OpenCV code, so a host with
only PyTorch (``engine: torch``) or OpenVINO could not load the OCR ops. These
modules are copies of exactly the functions the ops call, from the installed
PaddleOCR 2.10.0 (Apache License 2.0, Copyright (c) 2020 PaddlePaddle Authors),
with the Paddle-only branches (``isinstance(x, paddle.Tensor)``) and the branches
the ops' configs cannot reach dropped, and nothing else changed: the same numpy and
OpenCV calls in the same order, so the same bytes. tests/unit/test_ppocr_port.py
holds each one to PaddleOCR's own on many random inputs, to exact equality.

* :mod:`ops.ppocr.det_preprocess`: ``DetResizeForTest``, ``NormalizeImage``,
  ``ToCHWImage``, ``KeepKeys`` and ``transform`` (``ppocr/data``)
* :mod:`ops.ppocr.db_postprocess`: ``DBPostProcess`` (``ppocr/postprocess``)
* :mod:`ops.ppocr.rec_postprocess`: ``CTCLabelDecode``'s dictionary (``ppocr/postprocess``; the
  decode is ops/ctc.py's)
* :mod:`ops.ppocr.cls_postprocess`: ``ClsPostProcess`` (``ppocr/postprocess``)
* :mod:`ops.ppocr.det_boxes`: ``TextDetector``'s box filters and
  ``sorted_boxes`` (``tools/infer/predict_det.py``, ``predict_system.py``)
* :mod:`ops.ppocr.crop`: ``get_rotate_crop_image``, ``get_minarea_rect_crop``
  (``tools/infer/utility.py``)
* :mod:`ops.ppocr.quad`: the minimum-area rectangle's corners in PaddleOCR's order,
  which ``get_mini_boxes`` and ``get_minarea_rect_crop`` both write out

Imports numpy, OpenCV, pyclipper and shapely only; the ops import these modules on first use.
"""
