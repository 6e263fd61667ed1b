"""Probe step 6, served: the GPU check's two servers of configs/ocr_gpu.yml (batching on and
off, :mod:`.configs`), the OCR pipeline on the sample pages and the rec pipeline on their
lines' crops, at each client level (1 and 32), measured by the GPU check's closed loops
(:mod:`.load`); each measurement is written as it ends."""

from __future__ import annotations

import time
from typing import Any

from .probe_crops import page_crops
from .probe_step import StepContext


def run(ctx: StepContext) -> None:
    from bench.lib.measure import image_payloads
    from bench.lib.server import served_together

    from . import configs, load
    from .busy import gpus_for
    from .cli import png_of
    from .lines import page_pngs

    plan = ctx.plan
    data = configs.check_config(ctx.device, None, plan.max_batch_size)
    ctx.put("ops", {name: op["local_service_conf"] for name, op in data["op"].items()})
    names = configs.pipeline_names(data)
    crops = page_crops(plan.pages)
    inputs = {"ocr": page_pngs(plan.pages), "rec": [png_of(c) for c in crops]}
    ctx.put("inputs", {"ocr_pages": len(inputs["ocr"]), "rec_crops": len(inputs["rec"])})
    measured: list[dict[str, Any]] = []
    ctx.put("measured", measured)

    def done(name: str, clients: int, batching: str, summary: dict[str, Any]) -> None:
        measured.append({"pipeline": name, "clients": clients, "batching": batching, **summary})
        ctx.save()

    start = time.perf_counter()
    with served_together(configs.served_repositories(data)) as servers:
        ctx.put("servers_start_s", round(time.perf_counter() - start, 1))
        urls = {batching: server.url for batching, server in servers.items()}
        for pipeline in ("ocr", "rec"):
            rows = load.levels(
                urls,
                names[pipeline],
                image_payloads(inputs[pipeline]),
                plan.levels,
                plan.duration_s,
                plan.warmup_s,
                done,
                gpus_for(ctx.device),
            )
            ctx.put(pipeline, rows)
