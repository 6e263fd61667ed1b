"""serving.config.dag: order, sources/sinks, fan-out, fan-in and every graph error."""

import pytest

from serving.config.dag import Dag, DagError


def test_chain_order_sources_sinks():
    dag = Dag({"det": [], "cls": ["det"], "rec": ["cls"]})
    assert dag.order == ["det", "cls", "rec"]
    assert dag.sources == ["det"]
    assert dag.sinks == ["rec"]
    assert dag.inputs("rec") == ["cls"]
    assert dag.consumers("det") == ["cls"]
    assert dag.consumers("rec") == []
    assert dag.edges() == [("det", "cls"), ("cls", "rec")]
    assert list(dag) == dag.order and len(dag) == 3 and "cls" in dag and "x" not in dag


def test_order_is_topological_even_when_config_order_is_not():
    dag = Dag({"rec": ["det"], "det": []})
    assert dag.order == ["det", "rec"]
    assert dag.sources == ["det"] and dag.sinks == ["rec"]


def test_order_keeps_config_order_between_independent_ops():
    dag = Dag({"b": [], "a": [], "c": ["a"], "d": ["b"]})
    assert dag.order == ["b", "a", "c", "d"]


def test_fan_out_one_op_feeds_two():
    dag = Dag({"det": [], "rec": ["det"], "cls": ["det"]})
    assert dag.consumers("det") == ["rec", "cls"]
    assert dag.sources == ["det"]
    assert dag.sinks == ["rec", "cls"]
    assert dag.order == ["det", "rec", "cls"]


def test_fan_in_op_with_two_inputs():
    dag = Dag({"img": [], "txt": [], "join": ["img", "txt"]})
    assert dag.inputs("join") == ["img", "txt"]
    assert dag.sources == ["img", "txt"]
    assert dag.sinks == ["join"]
    assert dag.order[-1] == "join"


def test_diamond():
    dag = Dag({"a": [], "b": ["a"], "c": ["a"], "d": ["c", "b"]})
    assert dag.order == ["a", "b", "c", "d"]
    assert dag.edges() == [("a", "b"), ("a", "c"), ("c", "d"), ("b", "d")]


def test_inputs_returns_a_copy():
    dag = Dag({"a": [], "b": ["a"]})
    dag.inputs("b").append("x")
    dag.consumers("a").append("x")
    assert dag.inputs("b") == ["a"] and dag.consumers("a") == ["b"]


def test_two_cycle_is_named():
    with pytest.raises(DagError) as info:
        Dag({"det": ["rec"], "rec": ["det"]})
    assert str(info.value) == "cycle det -> rec -> det"
    assert info.value.op == "det"


def test_three_cycle_in_data_flow_direction():
    # a feeds b, b feeds c, c feeds a
    with pytest.raises(DagError, match=r"^cycle a -> b -> c -> a$"):
        Dag({"src": [], "a": ["c"], "b": ["a"], "c": ["b"]})


def test_cycle_found_from_downstream_op():
    with pytest.raises(DagError) as info:
        Dag({"out": ["x"], "x": ["y"], "y": ["x"]})
    assert str(info.value) == "cycle x -> y -> x"
    assert info.value.op == "x"


def test_self_loop():
    with pytest.raises(DagError, match="lists itself") as info:
        Dag({"a": ["a"]})
    assert info.value.op == "a"


def test_unknown_input_with_hint():
    with pytest.raises(DagError, match=r"unknown input op 'dett' \(did you mean 'det'\?\)") as info:
        Dag({"det": [], "rec": ["dett"]})
    assert info.value.op == "rec"


def test_duplicate_input():
    with pytest.raises(DagError, match="listed twice"):
        Dag({"a": [], "b": ["a", "a"]})


def test_inputs_must_be_a_list():
    with pytest.raises(DagError, match="must be a list"):
        Dag({"a": [], "b": "a"})


def test_empty_graph():
    with pytest.raises(DagError, match="no ops") as info:
        Dag({})
    assert info.value.op is None
    assert isinstance(info.value, ValueError)
