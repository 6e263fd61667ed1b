"""What instances of one op share in a device process (serving.runners.device_hosts.Shelf,
serving.runners.factory.weight_shares), with the engine's loaders replaced by fakes: a
group is loaded once, as thread instances are, whoever comes first; each instance takes
its own runner of it; a failed load fails the instances waiting on it, and a later try
loads afresh."""

from __future__ import annotations

import threading

import pytest

from serving.config.schema import LocalServiceConf
from serving.runners import device_hosts
from serving.runners.device_hosts import InstanceSpec, Share, Shelf, on_device
from serving.runners.factory import weight_shares

pytestmark = pytest.mark.unit

CONF = LocalServiceConf(instance_mode="device_process")


class Loads:
    """Fake loaders: record each load; ``fail`` makes the next group load raise."""

    def __init__(self, monkeypatch):
        self.groups: list[tuple[LocalServiceConf, int]] = []
        self.ones: list[int | None] = []
        self.fail = False
        self.gate = threading.Event()
        self.gate.set()
        monkeypatch.setattr(device_hosts, "load_in_process", self.group)
        monkeypatch.setattr(device_hosts, "load_one", self.one)

    def group(self, conf, count):
        self.gate.wait(10)
        self.groups.append((conf, count))
        if self.fail:
            self.fail = False
            raise MemoryError("out of device memory")
        return [("shared", len(self.groups), i) for i in range(count)]

    def one(self, conf, device_id=None):
        self.ones.append(device_id)
        return ("own", device_id)


def spec(index: int, size: int = 2, token: str = "t", device_id: int | None = None, **kw) -> InstanceSpec:
    return InstanceSpec(CONF, device_id, f"o{index}_", share=Share(token, size, index), **kw)


def test_a_group_is_loaded_once_and_each_instance_takes_its_own_runner(monkeypatch):
    loads = Loads(monkeypatch)
    shelf = Shelf()
    assert shelf.load(spec(1)) == ("shared", 1, 1)
    assert shelf.load(spec(0)) == ("shared", 1, 0)
    assert loads.groups == [(CONF, 2)] and loads.ones == []
    assert shelf._groups == {}  # every instance took its runner: the shelf holds none


def test_instances_arriving_together_wait_for_one_load(monkeypatch):
    loads = Loads(monkeypatch)
    loads.gate.clear()
    shelf = Shelf()
    got: dict[int, object] = {}
    threads = [threading.Thread(target=lambda i=i: got.update({i: shelf.load(spec(i, 3))})) for i in range(3)]
    for t in threads:
        t.start()
    loads.gate.set()
    for t in threads:
        t.join(10)
    assert len(loads.groups) == 1 and got == {i: ("shared", 1, i) for i in range(3)}


def test_a_failed_load_fails_its_instance_and_a_restart_loads_afresh(monkeypatch):
    loads = Loads(monkeypatch)
    loads.fail = True
    shelf = Shelf()
    with pytest.raises(RuntimeError, match="MemoryError: out of device memory"):
        shelf.load(spec(0))
    assert shelf.load(spec(0)) == ("shared", 2, 0) and shelf.load(spec(1)) == ("shared", 2, 1)


def test_alone_taken_twice_or_the_ops_own_model_loads_its_own(monkeypatch):
    loads = Loads(monkeypatch)
    shelf = Shelf()
    assert shelf.load(spec(0, size=1, device_id=3)) == ("own", 3)
    assert shelf.load(InstanceSpec(CONF, None, "o_")) == ("own", None)
    shelf.load(spec(0, size=3))
    assert shelf.load(spec(0, size=3)) == ("own", None)  # index 0 again: not a second share of one runner
    assert shelf.load(spec(0, factory=lambda device: ("factory", device), device_id=1)) == ("factory", 1)
    assert len(loads.groups) == 1


def test_a_group_loads_on_its_own_gpu():
    gpus = LocalServiceConf(device_type=1, devices="0,1")
    assert on_device(gpus, 1).devices == "1" and on_device(gpus, 1).device_type == 1
    assert on_device(CONF, None) is CONF


def test_weight_shares_group_the_instances_of_each_device():
    shares = weight_shares([0, 1, 0, 1, 0])
    assert [(s.size, s.index) for s in shares] == [(3, 0), (2, 0), (3, 1), (2, 1), (3, 2)]
    assert shares[0].token == shares[2].token != shares[1].token
    assert weight_shares([None])[0].size == 1
    assert weight_shares([None])[0].token != weight_shares([None])[0].token  # one token per op's instances


def test_a_device_process_imports_no_runtime_before_it_loads_a_model():
    """The process starts from these modules: on a GPU host without Paddle (the lent ones)
    it must start, then import only the engine its instances name."""
    import os
    import subprocess
    import sys

    code = (
        "import sys, serving.runners.device_hosts, serving.runners.process; "
        "bad = [m for m in ('paddle', 'paddleocr', 'paddle2onnx', 'openvino', 'torch', 'onnxruntime') "
        "if m in sys.modules]; print(bad); sys.exit(bool(bad))"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert res.returncode == 0, res.stdout + res.stderr
