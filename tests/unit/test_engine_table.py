"""The engine table (serving.config.engines): every registered engine states every
fact and names a loader, the schema offers exactly its engines, and each fact
agrees with what the config accepts."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from types import SimpleNamespace
from typing import get_args

import pytest

from serving.config import ConfigError, LocalServiceConf, parse_config
from serving.config.engines import ENGINE_NAMES, ENGINES, check_keys, engine_description, foreign_keys
from serving.config.errors import FieldProblem
from serving.runners.cpu_plan import pins_cpus
from tuning.cost_curves import Layout, layout_changes

FAKE = "tests.support.config_fakes:FakeOp"
FIELDS = LocalServiceConf.__pydantic_fields__
PRECISIONS = get_args(FIELDS["precision"].annotation)


def parse_svc(svc: dict):
    return parse_config({"op": {"a": {"class": FAKE, "local_service_conf": svc}}}, source="c.yml")


def test_the_schema_offers_exactly_the_tables_engines():
    assert get_args(FIELDS["engine"].annotation) == ENGINE_NAMES == tuple(ENGINES)
    assert LocalServiceConf().engine == ENGINE_NAMES[0] == "paddle"  # the default stays Paddle Inference
    assert set(ENGINE_NAMES) >= {"paddle", "openvino"}


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_every_engine_states_every_fact(name):
    engine = ENGINES[name]
    assert engine.name == name
    for field in dataclasses.fields(engine):
        assert getattr(engine, field.name) is not None, field.name
    assert engine.runtime and engine.summary in engine_description()
    assert isinstance(engine.threads_overlap, bool)
    assert engine.precisions and set(engine.precisions) <= {0, 1, 2}
    for device, precisions in engine.precisions.items():
        assert precisions and set(precisions) <= set(PRECISIONS), device
    for key, default in engine.own_keys.items():
        assert FIELDS[key].default == default, f"{name} owns {key}: its value elsewhere must be the default"
    sizes = engine.default_run_sizes(8)
    assert sizes == [] or (sorted(sizes) == sizes and set(sizes) <= set(range(1, 9)) and 8 in sizes)
    conf = LocalServiceConf(engine=name)
    assert isinstance(engine.pins_cores(conf), bool)
    assert engine.device_label(conf) == conf.device_label != ""
    for fact in ("model_files", "check", "default_run_sizes", "pins_cores", "device_label"):
        assert callable(getattr(engine, fact)), fact


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_every_engine_names_a_loader_with_both_functions(name):
    module = importlib.import_module(ENGINES[name].loader)
    assert list(inspect.signature(module.load_in_process).parameters) == ["conf", "count"]
    assert list(inspect.signature(module.load_one).parameters) == ["conf", "device_id"]
    assert inspect.signature(module.load_one).parameters["device_id"].default is None


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_a_precision_or_device_outside_the_facts_is_refused(name):
    """The facts never promise what the checks refuse the other way round: what they leave out is refused."""
    engine = ENGINES[name]
    for device in (0, 1, 2):
        for precision in PRECISIONS:
            if precision in engine.precisions.get(device, ()):
                continue
            with pytest.raises(ConfigError):
                parse_svc({"engine": name, "device_type": device, "precision": precision})


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_every_other_engines_own_key_is_refused_by_name(name):
    defaults = {f.name: getattr(LocalServiceConf(engine=name), f.name) for f in dataclasses.fields(LocalServiceConf)}
    for key in foreign_keys(name):
        with pytest.raises(FieldProblem) as caught:
            check_keys(name, SimpleNamespace(**{**defaults, key: object()}))
        assert caught.value.field == key
        owners = [e.name for e in ENGINES.values() if key in e.own_keys]
        assert f"needs engine: {' or '.join(owners)} (or drop it)" in str(caught.value)


def test_own_keys_shared_by_engines_agree_on_their_default_and_the_tuner_resets_them():
    owners = [key for engine in ENGINES.values() for key in engine.own_keys]
    for key in set(owners):
        defaults = {repr(e.own_keys[key]) for e in ENGINES.values() if key in e.own_keys}
        assert len(defaults) == 1, key
    assert foreign_keys("torch").keys().isdisjoint(ENGINES["torch"].own_keys)  # a shared key is no one's foreign
    for name in ENGINE_NAMES:
        changes = layout_changes(Layout(1, 2, name))
        assert {k: v for k, v in changes.items() if k in owners} == {
            key: owner.own_keys[key] for key, owner in foreign_keys(name).items()
        }


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_thread_instances_overlap_and_process_pinning_follow_the_facts(name):
    engine = ENGINES[name]
    threads = LocalServiceConf(engine=name, instance_num=2)
    processes = LocalServiceConf(engine=name, instance_num=2, instance_mode="process")
    assert threads.instances_overlap is engine.threads_overlap
    assert processes.instances_overlap
    assert not pins_cpus(threads)
    assert pins_cpus(processes) is engine.pins_cores(processes)
