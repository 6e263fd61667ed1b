"""The Ray backend's configuration, without a cluster: the ``ray:`` blocks
(validated by the real loader, every error naming file and key), the
deployments a repository becomes (names, Ray Serve options and their
defaults), the Ray Serve config file (``batchline ray build``, checked with Ray
Serve's own schema and against the application ``build_app`` binds), and the
config documents that carry configs to every replica."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from ray import cloudpickle
from ray.serve._private.build_app import build_app as ray_build_app
from ray.serve.schema import ServeDeploySchema

from serving import cli
from serving.config import ConfigError, load_config
from serving.config.documents import ConfigDocument, parse_documents, read_documents
from serving.config.file_set import RepositoryConfig, load_repository, pipeline_fingerprint
from serving.rayserve.app import backpressure_options, build_app, serve_config
from serving.rayserve.deployments import (
    IMPORT_PATH,
    INGRESS,
    METRICS_HUB,
    app_name,
    deployment_options,
    ingress_options,
    op_deployment_name,
    op_deployments,
    op_options,
    ray_conf,
)
from tests.support.ray_fakes import as_dicts, document, op_conf, split_add

FAKE = "tests.support.config_fakes:FakeOp"
ROOT = Path(__file__).resolve().parents[2]
REPOSITORY = str(ROOT / "configs" / "repository")


# ----------------------------------------------------------------------------- ray: blocks, through the loader


def load_error(tmp_path: Path, op_ray: str = "", top: str = "") -> tuple[str, str]:
    """The loader's error for a one-op config (op ``rec``: max_batch_size 8 x instance_num 2)
    with ``op_ray`` under ``op.rec`` and ``top`` at the top level."""
    text = textwrap.dedent(
        f"""\
        name: ocr
        op:
          rec:
            class: {FAKE}
            local_service_conf: {{max_batch_size: 8, instance_num: 2}}
        """
    )
    text += textwrap.indent(op_ray, "    ") + "\n" + top + "\n"
    path = tmp_path / "ocr.yml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(path), str(info.value)


@pytest.mark.parametrize(
    ("op_ray", "top", "key", "message"),
    [
        (
            "ray: {ray_actor_options: {num_gpu: 1}}",
            "",
            "op.rec.ray.ray_actor_options.num_gpu",
            "unknown key (did you mean 'num_gpus'?)",
        ),
        ("ray: {num_replica: 2}", "", "op.rec.ray.num_replica", "unknown key (did you mean 'num_replicas'?)"),
        (
            "ray: {num_replicas: 2, autoscaling_config: {max_replicas: 3}}",
            "",
            "op.rec.ray.num_replicas",
            "and autoscaling_config are alternatives",
        ),
        (
            "ray: {autoscaling_config: {min_replicas: 4, max_replicas: 3}}",
            "",
            "op.rec.ray.autoscaling_config.min_replicas",
            "4 is above max_replicas 3",
        ),
        (
            "ray: {autoscaling_config: {min_replicas: 1, max_replicas: 3, initial_replicas: 5}}",
            "",
            "op.rec.ray.autoscaling_config.initial_replicas",
            "5 is not between min_replicas 1 and max_replicas 3",
        ),
        (
            "ray: {max_ongoing_requests: 15}",
            "",
            "op.rec.ray.max_ongoing_requests",
            "15 is below what full batches need: max_batch_size 8 x instance_num 2 = 16",
        ),
        ("ray: {num_replicas: 0}", "", "op.rec.ray.num_replicas", "must be >= 1"),
        ("ray: {ray_actor_options: {num_cpus: -1}}", "", "op.rec.ray.ray_actor_options.num_cpus", "must be >= 0"),
        (
            "ray: {ray_actor_options: {resources: {accel: -2}}}",
            "",
            "op.rec.ray.ray_actor_options.resources.accel",
            "must be a number >= 0, got -2",
        ),
        ("", "ray: {ingress: {num_replica: 2}}", "ray.ingress.num_replica", "did you mean 'num_replicas'?"),
        (
            "",
            "ray: {ingress: {ray_actor_options: {num_cpu: 2}}}",
            "ray.ingress.ray_actor_options.num_cpu",
            "did you mean 'num_cpus'?",
        ),
        ("", "ray: {ingress: {ray_actor_options: {memory: -5}}}", "ray.ingress.ray_actor_options.memory", ">= 0"),
        ("", "ray: {routeprefix: /ocr}", "ray.routeprefix", "did you mean 'route_prefix'?"),
        ("", "ray: {route_prefix: ocr}", "ray.route_prefix", "must start with '/'"),
        ("", "ray: {route_prefix: /ocr/}", "ray.route_prefix", "not end with '/'"),
        ("", "ray: {route_prefix: '/a{b}'}", "ray.route_prefix", "hold no '{' or '}'"),
        ("", "ray: {app_name: 'a b'}", "ray.app_name", "must match"),
        ("", "ray: {metrics_interval_s: 0}", "ray.metrics_interval_s", "must be > 0"),
        # Ray Serve refuses 0 at deploy: refused at load instead
        ("ray: {max_queued_requests: 0}", "", "op.rec.ray.max_queued_requests", "-1 (no limit) or at least 1"),
        ("", "ray: {ingress: {max_queued_requests: -2}}", "ray.ingress.max_queued_requests", ">= -1"),
    ],
)
def test_ray_block_errors_name_file_and_key(tmp_path, op_ray, top, key, message):
    path, error = load_error(tmp_path, op_ray, top)
    assert error.startswith(f"{path}: {key}: "), error
    assert message in error


def test_max_ongoing_requests_that_holds_full_batches_is_accepted(tmp_path):
    path = tmp_path / "ocr.yml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: ocr
            ray: {{route_prefix: /ocr, app_name: ocr-app, ingress: {{num_replicas: 2}}}}
            op:
              rec:
                class: {FAKE}
                local_service_conf: {{max_batch_size: 8, instance_num: 2}}
                ray: {{max_ongoing_requests: 16, autoscaling_config: {{min_replicas: 0, max_replicas: 4}}}}
            """
        )
    )
    config = load_config(path)
    assert config.op["rec"].ray is not None and config.op["rec"].ray.max_ongoing_requests == 16
    assert (config.ray.route_prefix, config.ray.app_name, config.ray.ingress.num_replicas) == ("/ocr", "ocr-app", 2)


# ----------------------------------------------------------------------------- deployments


def repo_of(*documents: ConfigDocument) -> RepositoryConfig:
    return parse_documents(list(documents))


def test_deployment_names_plain_versioned_and_shared():
    repo = repo_of(
        document("p", split_add()),
        document("p", split_add(), version=2),
        document("a", {"x": op_conf("TextSplitOp", share="s")}),
        document("b", {"y": op_conf("TextSplitOp", share="s")}),
    )
    names = {(c.name, c.version, op.name): op_deployment_name(c, op) for c in repo.pipelines for op in c.ops}
    assert names == {
        ("p", None, "split"): "p-split",
        ("p", None, "add"): "p-add",
        ("p", 2, "split"): "p-v2-split",
        ("p", 2, "add"): "p-v2-add",
        ("a", None, "x"): "shared-s",
        ("b", None, "y"): "shared-s",
    }
    # one deployment for the shared op, run with its first user's config
    deployments = op_deployments(repo)
    assert list(deployments) == ["p-split", "p-add", "p-v2-split", "p-v2-add", "shared-s"]
    assert (deployments["shared-s"][0].name, deployments["shared-s"][1].name) == ("a", "x")
    assert list(deployment_options(repo)) == [*deployments, INGRESS, METRICS_HUB]


@pytest.mark.parametrize(
    ("documents", "message"),
    [
        (
            [document("p", {"a-b": op_conf("TextSplitOp")}), document("p-a", {"b": op_conf("EchoTextOp")})],
            "p-a.yml: op.b: its Ray Serve deployment name 'p-a-b' is also that of op 'a-b' of pipeline 'p'",
        ),
        (
            [document("shared", {"x": op_conf("TextSplitOp")}), document("q", {"y": op_conf("EchoTextOp", share="x")})],
            "q.yml: op.y: its Ray Serve deployment name 'shared-x' is also that of op 'x' of pipeline 'shared'",
        ),
        (
            [document("metrics", {"hub": op_conf("TextSplitOp")})],
            "metrics.yml: op.hub: its Ray Serve deployment name 'metrics-hub' is the metrics-hub deployment's",
        ),
    ],
)
def test_two_ops_never_share_a_deployment_name(documents, message):
    repo = parse_documents(documents)
    for make in (op_deployments, deployment_options, lambda repo: serve_config(documents)):
        with pytest.raises(ConfigError) as info:
            make(repo)
        assert message in str(info.value)


def only_op(**entry: Any):
    """The OpConfig of a one-op pipeline whose op entry is ``op_conf(**entry)``."""
    cls = entry.pop("cls", "TextSplitOp")
    return repo_of(document("p", {"op": op_conf(cls, **entry)})).pipelines[0].op["op"]


def test_op_options_default_cpus_and_in_flight_calls_from_the_op():
    options = op_options(only_op(instance_num=3, thread_num=2, max_batch_size=4), admitted=40)
    assert options == {
        "num_replicas": 1,
        "max_ongoing_requests": 2 * 4 * 3,  # two full batches per instance
        "ray_actor_options": {"num_cpus": 6.0},  # instance_num x thread_num
        "max_queued_requests": 40,  # the requests one ingress replica admits
        "graceful_shutdown_timeout_s": 20.0,
        "health_check_period_s": 10.0,
    }


def test_gpu_ops_reserve_their_gpus_and_one_cpu():
    one = op_options(only_op(device_type=1, instance_num=2, thread_num=4), admitted=1)
    assert one["ray_actor_options"] == {"num_cpus": 1.0, "num_gpus": 1.0}
    two = op_options(only_op(device_type=1, devices="0,1"), admitted=1)
    assert two["ray_actor_options"]["num_gpus"] == 2.0


def test_explicit_ray_options_pass_through():
    ray = {
        "num_replicas": 3,
        "max_ongoing_requests": 100,
        "max_queued_requests": 50,
        "graceful_shutdown_timeout_s": 5,
        "health_check_period_s": 2,
        "ray_actor_options": {"num_cpus": 0.5, "num_gpus": 0, "memory": 2**30, "resources": {"node_a": 1}},
    }
    options = op_options(only_op(device_type=1, ray=ray), admitted=999)
    assert options == {
        "num_replicas": 3,
        "max_ongoing_requests": 100,
        "ray_actor_options": {"num_cpus": 0.5, "memory": 2**30, "resources": {"node_a": 1.0}},  # num_gpus 0: none
        "max_queued_requests": 50,
        "graceful_shutdown_timeout_s": 5.0,
        "health_check_period_s": 2.0,
    }


def test_autoscaling_config_replaces_num_replicas():
    autoscaling = {"min_replicas": 0, "max_replicas": 4, "initial_replicas": 1, "target_ongoing_requests": 16}
    options = op_options(only_op(ray={"autoscaling_config": autoscaling}), admitted=1)
    assert "num_replicas" not in options
    assert options["autoscaling_config"] == {
        **autoscaling,
        "target_ongoing_requests": 16.0,
        "upscale_delay_s": 30.0,
        "downscale_delay_s": 600.0,
    }


def test_ingress_lets_every_admissible_request_in():
    repo = repo_of(
        document("a", split_add(), worker_num=4),
        document("b", split_add(), worker_num=4, dag={"max_queue_size": 10}),
    )
    options = ingress_options(repo)
    assert options["max_ongoing_requests"] == 32 + 10 + 4  # summed max_queue_size + worker_num
    assert options["ray_actor_options"] == {"num_cpus": 1.0}
    assert options["num_replicas"] == 1


def test_every_deployment_bounds_its_queue_by_default():
    """Ray's default, -1, lets calls wait in each caller without end. The defaults: an op's
    deployment, the requests one ingress replica admits that may call it (a shared op: every
    user's); the ingress, every admissible request (what its proxies may hold for it)."""
    repo = repo_of(
        document("a", {"x": op_conf("TextSplitOp", share="s"), "add": op_conf("AddOp", ["x"])}),
        document("b", {"y": op_conf("TextSplitOp", share="s")}, dag={"max_queue_size": 10}),
    )
    queued = {name: options["max_queued_requests"] for name, options in deployment_options(repo).items()}
    assert queued == {"shared-s": 32 + 10, "a-add": 32, INGRESS: 32 + 10, METRICS_HUB: 100}
    # the bound never refuses a request admission let in: at least the admitted callers
    assert queued["shared-s"] >= repo.max_queue_size and queued[INGRESS] == repo.max_queue_size
    explicit = repo_of(
        document(
            "p",
            {"op": op_conf("TextSplitOp", ray={"max_queued_requests": -1})},  # Ray's "no limit", said outright
            ray={"ingress": {"max_queued_requests": 5}},
        )
    )
    options = deployment_options(explicit)
    assert (options["p-op"]["max_queued_requests"], options[INGRESS]["max_queued_requests"]) == (-1, 5)


def test_the_ingress_block_is_the_first_file_that_sets_one():
    ingress = {"ingress": {"num_replicas": 2, "max_ongoing_requests": 7, "ray_actor_options": {"num_cpus": 2}}}
    repo = repo_of(document("a", split_add()), document("b", split_add(), ray={**ingress, "app_name": "ocr-app"}))
    options = ingress_options(repo)
    assert (options["num_replicas"], options["max_ongoing_requests"]) == (2, 7)
    assert options["ray_actor_options"] == {"num_cpus": 2.0}
    assert app_name(repo) == "ocr-app"


def test_files_of_one_application_agree_on_the_ray_blocks():
    top = {"app_name": "ocr-app"}
    agree = repo_of(
        document("a", split_add(), ray=top), document("b", split_add()), document("c", split_add(), ray=top)
    )
    assert app_name(agree) == "ocr-app"
    differ = repo_of(document("a", split_add(), ray=top), document("b", split_add(), ray={"app_name": "other"}))
    with pytest.raises(ConfigError) as info:
        ray_conf(differ)
    assert str(info.value).startswith("b.yml: ray: differs from the ray block of a.yml")
    shared = repo_of(
        document("a", {"x": op_conf("TextSplitOp", share="s", ray={"num_replicas": 2})}),
        document("b", {"y": op_conf("TextSplitOp", share="s", ray={"num_replicas": 3})}),
    )
    with pytest.raises(ConfigError) as info:
        op_deployments(shared)
    assert str(info.value).startswith("b.yml: op.y.ray: differs from that of op 'x' of pipeline 'a'")
    same = repo_of(
        document("a", {"x": op_conf("TextSplitOp", share="s")}),
        document("b", {"y": op_conf("TextSplitOp", share="s", ray={})}),  # an empty block is the default
    )
    assert list(op_deployments(same)) == ["shared-s"]


def test_app_name_is_the_pipeline_or_batchline():
    assert app_name(repo_of(document("ocr", split_add()))) == "ocr"
    assert app_name(repo_of(document("ocr", split_add()), document("ocr", split_add(), version=2))) == "ocr"
    assert app_name(repo_of(document("a", split_add()), document("b", split_add()))) == "batchline"


# ----------------------------------------------------------------------------- the Ray Serve config file and app


DOCUMENTS = [
    document("p", split_add(), ray={"route_prefix": "/", "app_name": "fakes"}),
    document("p", split_add(), version=2),
    document("q", {"x": op_conf("TextSplitOp", share="s"), "echo": op_conf("EchoTextOp", ["x"])}),
    document("r", {"y": op_conf("TextSplitOp", share="s")}),
]


def bound_deployments(args: dict[str, Any]) -> dict[str, Any]:
    """The deployments of ``build_app(args)`` by name, as Ray Serve builds the
    application (no cluster: handles are placeholders)."""
    built = ray_build_app(build_app(args), name="fakes", make_deployment_handle=lambda d, app: ("handle", d.name))
    assert built.ingress_deployment_name == INGRESS
    return {d.name: d for d in built.deployments}


def test_serve_config_is_valid_for_ray_serve_and_lists_what_build_app_binds():
    config = serve_config(DOCUMENTS, host="0.0.0.0", port=8123, warmup=False)
    schema = ServeDeploySchema.model_validate(config)  # Ray Serve's own check of a config file
    (application,) = schema.applications
    assert (application.name, application.route_prefix, application.import_path) == ("fakes", "/", IMPORT_PATH)
    assert (schema.http_options.host, schema.http_options.port) == ("0.0.0.0", 8123)
    listed = {d["name"]: d for d in config["applications"][0]["deployments"]}
    bound = bound_deployments(config["applications"][0]["args"])
    assert (
        set(listed)
        == set(bound)
        == {"p-split", "p-add", "p-v2-split", "p-v2-add", "shared-s", "q-echo", INGRESS, METRICS_HUB}
    )
    for name, deployment in bound.items():  # the file repeats the options the app is built with
        assert deployment.max_ongoing_requests == listed[name]["max_ongoing_requests"], name
        assert deployment.ray_actor_options["num_cpus"] == listed[name]["ray_actor_options"]["num_cpus"], name


def test_build_app_binds_each_replica_to_its_op_and_the_ingress_to_every_op():
    args = {"configs": as_dicts(DOCUMENTS), "warmup": False}
    bound = bound_deployments(args)
    documents, pipeline, version, op, hub = bound["p-v2-add"].init_args
    assert (documents, pipeline, version, op, hub) == (args["configs"], "p", 2, "add", ("handle", METRICS_HUB))
    assert bound["p-v2-add"].init_kwargs == {"warmup": False}
    assert bound["shared-s"].init_args[1:4] == ("q", 1, "x")  # a shared op runs its first user's config
    documents, ops, hub = bound[INGRESS].init_args
    assert ops == {name: ("handle", name) for name in bound if name not in (INGRESS, METRICS_HUB)}
    # the ingress finds each op's handle under the name its stage is given
    repo = parse_documents(DOCUMENTS)
    assert {op_deployment_name(c, op) for c in repo.pipelines for op in c.ops} == set(ops)


def test_rays_own_503_past_the_ingress_queue_says_when_to_retry():
    """Past ``max_queued_requests`` Ray answers the ingress's requests itself: its 503 carries
    Retry-After (as every 503 of ours does) through the application build_app makes; the
    config file leaves it to the code (Ray before 2.58 has no such option and would refuse it)."""
    from ray.serve.config import BackpressureConfig

    bound = bound_deployments({"configs": as_dicts(DOCUMENTS), "warmup": False})
    assert bound[INGRESS].backpressure_config == BackpressureConfig(status_code=503, retry_after_s=1.0)
    listed = serve_config(DOCUMENTS)["applications"][0]["deployments"]
    assert [d["name"] for d in listed if "backpressure_config" in d] == []


def test_on_ray_without_backpressure_config_the_ingress_is_built_without_it(monkeypatch):
    import ray.serve.config

    monkeypatch.delattr(ray.serve.config, "BackpressureConfig")
    assert backpressure_options() == {}
    bound = bound_deployments({"configs": as_dicts(DOCUMENTS), "warmup": False})
    assert bound[INGRESS].max_queued_requests == parse_documents(DOCUMENTS).max_queue_size


def test_serve_config_defaults_come_from_the_configs():
    config = serve_config([document("p", split_add(), http_port=9100)])
    assert config["http_options"] == {"host": "127.0.0.1", "port": 9100}
    (application,) = config["applications"]
    assert (application["name"], application["route_prefix"]) == ("p", "/")
    assert application["args"]["warmup"] is True


# ----------------------------------------------------------------------------- batchline ray build / serve


def write_config(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def same_repository(a: RepositoryConfig, b: RepositoryConfig) -> None:
    assert a.files == b.files
    assert list(a.routes) == list(b.routes)
    assert (a.host, a.http_port, a.worker_num, a.auth_token, a.max_queue_size) == (
        b.host,
        b.http_port,
        b.worker_num,
        b.auth_token,
        b.max_queue_size,
    )
    assert {k: [(c.name, op) for c, op in v.users] for k, v in a.shares.items()} == {
        k: [(c.name, op) for c, op in v.users] for k, v in b.shares.items()
    }
    for x, y in zip(a.pipelines, b.pipelines, strict=True):
        assert x.model_dump() == y.model_dump()
        assert x.source_path == y.source_path
        assert pipeline_fingerprint(x) == pipeline_fingerprint(y)


def test_ray_build_writes_a_serve_config_whose_configs_round_trip(tmp_path, capsys):
    (tmp_path / "configs").mkdir()
    for doc in DOCUMENTS:
        name = f"{doc.data['name']}{doc.data.get('version', '')}.yml"
        write_config(tmp_path / "configs" / name, doc.data)
    out = tmp_path / "serve.yaml"
    assert cli.main(["ray", "build", str(tmp_path / "configs"), "-o", str(out), "--no-warmup"]) == 0
    assert "serve deploy" in capsys.readouterr().err
    text = out.read_text()
    assert text.startswith("# Ray Serve config written by: batchline ray build")
    written = yaml.safe_load(text)
    ServeDeploySchema.model_validate(written)
    args = written["applications"][0]["args"]
    assert args["warmup"] is False
    shipped = parse_documents([ConfigDocument.from_dict(d) for d in args["configs"]])
    same_repository(shipped, load_repository([str(tmp_path / "configs")]))


def test_ray_build_to_stdout(tmp_path, capsys):
    config = write_config(tmp_path / "p.yml", document("p", split_add()).data)
    assert cli.main(["ray", "build", str(config)]) == 0
    written = yaml.safe_load(capsys.readouterr().out)
    assert written["applications"][0]["name"] == "p"


def test_ray_build_says_what_direct_ingress_needs_of_the_cluster(tmp_path, capsys):
    data = document("p", split_add()).data
    data["ray"] = {"direct_ingress": True}
    config = write_config(tmp_path / "p.yml", data)
    out = tmp_path / "serve.yaml"
    assert cli.main(["ray", "build", str(config), "-o", str(out)]) == 0
    need = "start every node of the cluster with RAY_SERVE_ENABLE_DIRECT_INGRESS=1"
    assert need in capsys.readouterr().err
    text = out.read_text()
    assert f"# ray.direct_ingress: {need}" in text.split("\napplications:")[0]
    ServeDeploySchema.model_validate(yaml.safe_load(text))
    plain = write_config(tmp_path / "q.yml", document("q", split_add()).data)
    assert cli.main(["ray", "build", str(plain)]) == 0
    assert "direct_ingress" not in capsys.readouterr().out


def test_ray_build_of_a_bad_config_names_file_and_key(tmp_path, capsys):
    data = document("p", split_add()).data
    data["op"]["add"]["ray"] = {"num_replica": 2}
    config = write_config(tmp_path / "p.yml", data)
    out = tmp_path / "serve.yaml"
    assert cli.main(["ray", "build", str(config), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{config}: op.add.ray.num_replica: unknown key (did you mean 'num_replicas'?)" in err
    assert not out.exists()


SECRET = "s3cret-Value-42"


@pytest.mark.parametrize(
    ("key", "env"), [("auth_token", "BATCHLINE_AUTH_TOKEN"), ("admin_token", "BATCHLINE_ADMIN_TOKEN")]
)
def test_ray_build_refuses_a_config_that_holds_a_token(tmp_path, capsys, key, env):
    """The file embeds the configs, and Ray's dashboard shows a deployed one: a token there
    is refused (file, key and the variable to use instead named; the token never shown)."""
    config = write_config(tmp_path / "p.yml", document("p", split_add(), **{key: SECRET}).data)
    out = tmp_path / "serve.yaml"
    assert cli.main(["ray", "build", str(config), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{config}: {key}: a token would be written into the Ray Serve config" in err
    assert env in err and "Secret" in err
    assert SECRET not in err
    assert not out.exists()


def test_ray_build_output_holds_no_token_and_replicas_read_the_environment(tmp_path, capsys, monkeypatch):
    """Built where the token is set (as a deploy machine may have it): nothing of it is written;
    the ingress is bound with the proxies' host, so a replica can refuse to serve it openly."""
    monkeypatch.setenv("BATCHLINE_AUTH_TOKEN", SECRET)
    monkeypatch.setenv("BATCHLINE_ADMIN_TOKEN", SECRET + "-admin")
    config = write_config(tmp_path / "p.yml", document("p", split_add()).data)
    out = tmp_path / "serve.yaml"
    assert cli.main(["ray", "build", str(config), "--host", "0.0.0.0", "-o", str(out)]) == 0
    text = out.read_text()
    assert SECRET not in text and "token" not in text.lower()
    (application,) = yaml.safe_load(text)["applications"]
    assert application["args"]["http_host"] == "0.0.0.0"
    assert bound_deployments(application["args"])[INGRESS].init_kwargs == {"http_host": "0.0.0.0"}


def test_serve_with_an_address_but_without_ray_is_refused(tmp_path, caplog):
    config = write_config(tmp_path / "p.yml", document("p", split_add()).data)
    assert cli.main(["serve", str(config), "--address", "auto"]) == 2
    assert "--address is for --ray" in caplog.text


def test_serve_on_ray_refuses_a_bad_config_before_starting_a_cluster(tmp_path, caplog):
    config = write_config(tmp_path / "metrics.yml", document("metrics", {"hub": op_conf("TextSplitOp")}).data)
    assert cli.main(["serve", str(config), "--ray"]) == 2
    assert "op.hub: its Ray Serve deployment name 'metrics-hub'" in caplog.text


# ----------------------------------------------------------------------------- config documents


def test_documents_of_the_shipped_repository_parse_as_the_loader_loads_it():
    documents = read_documents([REPOSITORY])
    assert [Path(d.source).name for d in documents] == ["ernie.yml", "ocr.yml", "ocr_ernie.yml"]
    assert all(Path(d.path).is_absolute() and Path(d.path).exists() for d in documents)
    parsed = parse_documents(documents)
    same_repository(parsed, load_repository([REPOSITORY]))
    assert list(parsed.routes) == ["ernie", "ocr", "ocr_ernie"]
    assert {name: [c.name for c, _ in share.users] for name, share in parsed.shares.items()} == {
        "det": ["ocr", "ocr_ernie"],
        "rec": ["ocr", "ocr_ernie"],
    }
    assert [name for name in deployment_options(parsed) if name.startswith("shared-")] == ["shared-det", "shared-rec"]


def test_documents_travel_as_plain_data():
    documents = read_documents([REPOSITORY])
    for doc in documents:
        assert ConfigDocument.from_dict(doc.as_dict()) == doc
        # as Ray ships them to replicas, and as batchline ray build writes them
        assert ConfigDocument.from_dict(cloudpickle.loads(cloudpickle.dumps(doc.as_dict()))) == doc
        assert ConfigDocument.from_dict(yaml.safe_load(yaml.safe_dump(doc.as_dict()))) == doc
    same_repository(
        parse_documents([ConfigDocument.from_dict(d.as_dict()) for d in documents]), parse_documents(documents)
    )


def test_errors_of_several_files_come_together(tmp_path):
    a = document("a", split_add()).data
    a["op"]["split"]["ray"] = {"num_gpu": 1}
    b = document("b", split_add()).data
    b["dag"]["max_queue_sise"] = 3
    write_config(tmp_path / "a.yml", a)
    write_config(tmp_path / "b.yml", b)
    documents = read_documents([str(tmp_path)])
    with pytest.raises(ConfigError) as info:
        parse_documents(documents)
    assert list(info.value.by_source) == [str(tmp_path / "a.yml"), str(tmp_path / "b.yml")]
    assert [key for key, _ in info.value.problems] == ["op.split.ray.num_gpu", "dag.max_queue_sise"]


def test_unreadable_files_are_reported_together(tmp_path):
    (tmp_path / "broken.yml").write_text("name: [unclosed\n")
    missing = str(tmp_path / "missing.yml")
    with pytest.raises(ConfigError) as info:
        read_documents([str(tmp_path / "broken.yml"), missing])
    assert list(info.value.by_source) == [str(tmp_path / "broken.yml"), missing]
