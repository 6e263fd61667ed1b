"""The CPUs a ``--ray`` application asks for and how they fit one machine
(:mod:`serving.rayserve.room`), decided without a cluster: the shipped OCR
config's defaults ask for 5 CPUs and are scaled to a 2-core machine, what a
config sets itself is kept, and what cannot fit is refused at once (exit 2,
before Ray starts) with the need, the supply and the keys to change."""

from __future__ import annotations

import logging
import os

import pytest
import yaml

from serving.config.documents import ConfigDocument, parse_documents, read_documents
from serving.rayserve import run
from serving.rayserve.app import build_app, serve_config
from serving.rayserve.deployments import deployment_options
from serving.rayserve.room import NoRoom, cpu_asks, fit_cpus
from tests.support.ray_fakes import document, op_conf, split_add

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OCR = os.path.join(ROOT, "configs", "ocr.yml")


def ocr_documents(tmp_path, ray_blocks: dict | None = None, top: dict | None = None) -> list[ConfigDocument]:
    """configs/ocr.yml, with ``ray_blocks[op]`` as each op's ``ray:`` block and ``top`` merged in."""
    with open(OCR, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    for op, block in (ray_blocks or {}).items():
        data["op"][op]["ray"] = block
    data.update(top or {})
    path = tmp_path / "ocr.yml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return read_documents([str(path)])


def test_the_shipped_ocr_config_asks_for_five_cpus_by_default():
    asks = cpu_asks(parse_documents(read_documents([OCR])))
    assert [(a.deployment, a.replicas, a.cpus, a.explicit) for a in asks] == [
        ("ocr-det", 1, 2.0, False),
        ("ocr-rec", 1, 2.0, False),
        ("ingress", 1, 1.0, False),
    ]
    assert sum(a.total for a in asks) == 5.0


def test_defaults_are_scaled_together_to_fit_a_two_core_machine():
    asks = cpu_asks(parse_documents(read_documents([OCR])))
    fitted = fit_cpus(asks, 2)
    assert fitted == {"ocr-det": 0.8, "ocr-rec": 0.8, "ingress": 0.4}
    assert fit_cpus(asks, 5) == {} and fit_cpus(asks, 16) == {}  # they fit: nothing changes


def test_scaled_asks_never_add_up_past_the_supply():
    repo = parse_documents([document("p", {f"op{i}": op_conf("TextSplitOp", instance_num=3) for i in range(7)})])
    asks = cpu_asks(repo)  # 7 ops x 3 CPUs + the ingress's 1 = 22
    fitted = fit_cpus(asks, 3)
    assert all(0 < cpus < 1 for cpus in fitted.values())
    assert sum(fitted.values()) <= 3
    assert all(round(cpus * 10_000) == cpus * 10_000 for cpus in fitted.values())  # Ray's unit: 1/10000


def test_what_a_config_sets_is_kept_and_the_defaults_share_what_is_left(tmp_path):
    docs = ocr_documents(tmp_path, {"rec": {"num_replicas": 2, "ray_actor_options": {"num_cpus": 0.5}}})
    asks = cpu_asks(parse_documents(docs))
    assert [(a.deployment, a.replicas, a.cpus, a.explicit) for a in asks][1] == ("ocr-rec", 2, 0.5, True)
    fitted = fit_cpus(asks, 2)  # 1 set, 3 by default (det 2, ingress 1) into the 1 left
    assert fitted == {"ocr-det": 0.6666, "ingress": 0.3333}


def test_autoscaled_deployments_count_their_initial_replicas(tmp_path):
    scaling = {"min_replicas": 1, "max_replicas": 4, "initial_replicas": 3}
    docs = ocr_documents(tmp_path, {"rec": {"autoscaling_config": scaling, "ray_actor_options": {"num_cpus": 1.0}}})
    asks = {a.deployment: a for a in cpu_asks(parse_documents(docs))}
    assert asks["ocr-rec"].replicas == 3 and asks["ocr-rec"].total == 3.0


@pytest.mark.parametrize(
    ("blocks", "top"),
    [
        ({"rec": {"num_replicas": 3, "ray_actor_options": {"num_cpus": 1.0}}}, {}),  # set: 3 of 2
        ({"det": {"ray_actor_options": {"num_cpus": 1.0}}, "rec": {"ray_actor_options": {"num_cpus": 1.0}}}, {}),
    ],
)
def test_what_cannot_fit_is_refused_naming_need_supply_and_keys(tmp_path, blocks, top):
    docs = ocr_documents(tmp_path, blocks, top)
    with pytest.raises(NoRoom) as refused:
        fit_cpus(cpu_asks(parse_documents(docs)), 2)
    message = str(refused.value)
    assert "this machine gives Ray 2" in message
    assert "op.rec.ray.ray_actor_options.num_cpus" in message and "op.rec.ray.num_replicas" in message
    assert "ray.ingress.ray_actor_options.num_cpus" in message
    assert str(tmp_path / "ocr.yml") in message  # the file that holds the keys
    assert "--address" in message


def test_the_refusal_counts_the_need(tmp_path):
    docs = ocr_documents(tmp_path, {"rec": {"num_replicas": 3, "ray_actor_options": {"num_cpus": 1.0}}})
    with pytest.raises(NoRoom, match=r"ask for 6 CPUs \(3 of them set in the configs\)"):
        fit_cpus(cpu_asks(parse_documents(docs)), 2)


def test_fitted_cpus_reach_the_deployments_build_app_binds():
    docs = read_documents([OCR])
    fitted = {"ocr-det": 0.8, "ocr-rec": 0.8, "ingress": 0.4}
    options = deployment_options(parse_documents(docs), fitted)
    assert {name: o["ray_actor_options"]["num_cpus"] for name, o in options.items()} == {**fitted, "metrics-hub": 0.0}
    config = serve_config(docs, num_cpus=fitted)
    listed = {d["name"]: d["ray_actor_options"]["num_cpus"] for d in config["applications"][0]["deployments"]}
    assert listed == {**fitted, "metrics-hub": 0.0}
    app = build_app(config["applications"][0]["args"])
    bound = {}
    for node in [app._bound_deployment, *app._bound_deployment.init_args[1].values()]:
        deployment = node._bound_deployment if hasattr(node, "_bound_deployment") else node
        bound[deployment.name] = deployment.ray_actor_options["num_cpus"]
    assert bound == {"ingress": 0.4, "ocr-det": 0.8, "ocr-rec": 0.8}
    assert "num_cpus" not in serve_config(docs)["applications"][0]["args"]  # `ray build`: the configs' own


def test_serve_on_ray_refuses_before_starting_ray(tmp_path, monkeypatch, caplog):
    docs = ocr_documents(tmp_path, {"rec": {"num_replicas": 3, "ray_actor_options": {"num_cpus": 1.0}}})
    started = []
    monkeypatch.setattr(run, "local_cpus", lambda: 2)
    monkeypatch.setattr(run.ray, "init", lambda *a, **k: started.append(k))
    with caplog.at_level(logging.ERROR, logger=run.__name__):
        assert run.serve_on_ray(docs, address=None) == 2
    assert started == []
    assert "ask for 6 CPUs" in caplog.text and "op.rec.ray.ray_actor_options.num_cpus" in caplog.text


def test_fake_op_pipelines_fit_as_well():
    asks = cpu_asks(parse_documents([document("p", split_add())]))
    assert [a.deployment for a in asks] == ["p-split", "p-add", "ingress"]
    assert fit_cpus(asks, 1) == {"p-split": 0.4, "p-add": 0.4, "ingress": 0.2}  # 2, 2 and 1 asked
