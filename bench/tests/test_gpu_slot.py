"""bench/gpu_slot.sh, the one command per half of a short GPU slot, on the CPU: it refuses a
folder --prepare did not fill and a half it does not know, installs nothing when the
folder carries no wheels, and leaves the tool's results as one archive (few files come
back from a lent machine)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import tarfile

from bench.lib.paths import ROOT

SCRIPT = f"{ROOT}/bench/gpu_slot.sh"
QUICK_VERSIONS = ("--device", "cpu", "--quick", "--step", "versions")


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
    run = slot("probe", str(carry), str(out), *QUICK_VERSIONS)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    with tarfile.open(out / "probe.tgz") as archive:
        names = archive.getnames()
        assert "probe/gpu_probe.json" in names
        report = json.load(archive.extractfile("probe/gpu_probe.json"))
    assert report["steps"]["versions"]["status"] == "ok", report["steps"]


def a_wheel(folder, name: str, version: str) -> None:
    """A pure-Python wheel of one empty module, as pip builds one."""
    import zipfile

    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": "",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        for path, text in files.items():
            wheel.writestr(path, text)


def test_the_carried_wheels_install_beside_the_hosts_python_not_into_it(tmp_path):
    carry = tmp_path / "carry"
    (carry / "wheels").mkdir(parents=True)
    (carry / "prepared.json").write_text(json.dumps({"commit": "0123abc"}), encoding="utf-8")
    a_wheel(carry / "wheels", "bl_slot_marker", "1.0")
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    run = subprocess.run(
        ["bash", SCRIPT, "probe", str(carry), str(tmp_path / "out"), *QUICK_VERSIONS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, TMPDIR=str(env_tmp)),
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert (env_tmp / "bl-carried-site" / "bl_slot_marker.py").exists()
    assert importlib.util.find_spec("bl_slot_marker") is None  # this Python's environment is untouched
