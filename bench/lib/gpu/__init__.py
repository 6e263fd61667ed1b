"""``python -m bench.gpu_check``: the OCR pipeline on one GPU (or, ``--device cpu``, on the
CPU), one concern a module:

* ``plan``: what a run measures (full, or ``--quick``): pages, batch sizes, client levels, durations;
* ``device``: the environment the run reports, and the refusal when the GPU asked for is not there;
* ``configs``: the configs served and loaded, derived from configs/ocr_gpu.yml;
* ``curves``: time per predictor call against batch size, one runner loaded in this process;
* ``lines``: the served lines of the committed pages against PaddleOCR 2.10's committed answers;
* ``load``: closed-loop throughput and p99, batching on and off side by side;
* ``report``: the JSON document's markdown table;
* ``prepare``: ``--prepare DIR``, the folder that travels to a GPU host (ONNX cache, wheels);
* ``host``: which modules a GPU host lacks, and a check that the check imports without them.
"""
