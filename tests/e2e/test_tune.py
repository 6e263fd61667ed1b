"""``batchline tune`` end to end, as a user runs it: the real command on a
config whose op has a known, GPU-like cost (the model-free image op: 30 ms a
batch plus 1 ms an item, shipped with batching off), the user's images, a
tuned config written with its reasons, and the verification bench of both
configs served side by side. Batching pays there by construction, so the
recommendation and the verification can both be checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from tests.support.image_fakes import encode_png, image_config, make_image
from tests.support.server_process import ROOT

pytestmark = pytest.mark.slow


def test_tune_recommends_batching_for_a_gpu_like_op_and_verifies_it(tmp_path):
    config = tmp_path / "img.yml"
    config.write_text(image_config(delay_ms=30, per_item_ms=1, max_batch_size=1, max_queue_delay=0))
    images = tmp_path / "images"
    images.mkdir()
    for i in range(6):
        (images / f"{i}.png").write_bytes(encode_png(make_image(48 + 8 * i, 32, seed=i)))
    out, report = tmp_path / "img.tuned.yml", tmp_path / "report.json"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), COLUMNS="120")
    done = subprocess.run(
        [sys.executable, "-m", "serving.cli", "tune", str(config), "--p99-ms", "400"]
        + ["--inputs", str(images / "*.png"), "-o", str(out), "--budget-s", "60", "--json", str(report)],
        capture_output=True,
        text=True,
        timeout=400,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]

    tuned_text = out.read_text()
    svc = yaml.safe_load(tuned_text)["op"]["stats"]["local_service_conf"]
    assert svc["max_batch_size"] >= 8, tuned_text
    assert "# tuned: was 1; up to" in tuned_text and "req/s with p99" in tuned_text

    result = json.loads(report.read_text())
    (op,) = result["ops"]
    assert op["tuned"]["max_rps"] > 3 * op["current"]["max_rps"]
    points = {int(n): s for n, s in op["curves"][0]["points_s"].items()}
    assert points[1] == pytest.approx(0.031, abs=0.02)  # the op's own cost, measured
    check = result["verification"]
    assert check["verified"], check
    assert all(run["failed"] == 0 for runs in check["runs"].values() for run in runs)
    best = check["best_within_budget"]
    assert best["tuned"] > 1.5 * (best["original"] or 0), check
    assert "verification" in done.stderr and "tuned / original" in done.stderr
