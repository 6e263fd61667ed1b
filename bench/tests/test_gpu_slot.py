"""bench/gpu_slot.sh, the one command per half of a short GPU slot, on the CPU: it refuses a
folder --prepare did not fill and a half it does not know, installs nothing when the
folder carries no wheels, and leaves the tool's results as one archive (few files come
back from a lent machine)."""

from __future__ import annotations

import json
import subprocess
import tarfile

from bench.lib.paths import ROOT

SCRIPT = f"{ROOT}/bench/gpu_slot.sh"


def slot(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", SCRIPT, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_an_unknown_half_and_an_unprepared_folder_are_refused(tmp_path):
    assert slot("both").returncode == 2
    run = slot("probe", str(tmp_path), str(tmp_path / "out"))
    assert run.returncode == 3 and "no prepared.json" in run.stdout


def test_the_probe_half_leaves_one_archive_of_its_results(tmp_path):
    carry = tmp_path / "carry"
    carry.mkdir()
    (carry / "prepared.json").write_text(json.dumps({"commit": "0123abc"}), encoding="utf-8")
    out = tmp_path / "out"
    run = slot("probe", str(carry), str(out), "--device", "cpu", "--quick", "--step", "versions")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    with tarfile.open(out / "probe.tgz") as archive:
        names = archive.getnames()
        assert "probe/gpu_probe.json" in names
        report = json.load(archive.extractfile("probe/gpu_probe.json"))
    assert report["steps"]["versions"]["status"] == "ok", report["steps"]
