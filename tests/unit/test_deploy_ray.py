"""deploy/ray/ agrees with ``batchline ray build``, with the image it runs and with the
deployments it must hold.

No Ray cluster and no Kubernetes here. What is checked:

* ``deploy/ray/serve.yaml`` and the RayService's ``serveConfigV2`` are the output of
  ``batchline ray build pkg://configs/ocr.yml`` (with ``--host 0.0.0.0 --port 8000`` for
  KubeRay), regenerated here and compared as text below the comment header. One key differs on
  purpose: each config's ``path`` (where the build machine read the file) is the path in the
  image, and is shown to be inert for this config. Both also pass Ray Serve's own config schema
  (``ServeDeploySchema``: types and values; it accepts unknown keys) and build an application.
* the RayService (a CRD, in no Kubernetes schema): a small JSON schema of exactly the fields
  we use (``RAYSERVICE_SCHEMA``, unknown fields rejected); the head's and worker group's pod
  templates inside it: the Kubernetes 1.34 schema of ``PodTemplateSpec`` (kubernetes-validate,
  strict), by wrapping each in a core/v1 ``PodTemplate``. Not validated: the rest of KubeRay's
  CRD, what KubeRay adds to the pods (command, probes, ports), whether the operator accepts it.
* numbers derived elsewhere: the workers' CPUs hold one replica of every deployment at the
  ``ray_actor_options`` the config gives; the Serve port is the containers' ``serve`` port;
  ``rayVersion`` is the image's pinned Ray; the pods run as the image's user.
* hostile traffic: no token in any file (replicas read a Secret); Ray's token authentication
  on, at a Ray that has it; a NetworkPolicy (Kubernetes 1.34 schema) that selects every Ray pod
  and opens only the Serve port to everyone; no service account token where replicas run; the
  dashboard never bound to 0.0.0.0 by us or by the docs; every deployment's queue bounded.
"""

from __future__ import annotations

import copy
import re
import shlex
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from serving.config.documents import ConfigDocument, parse_documents
from tests.unit.test_deploy import (
    _INT,
    _METADATA,
    _STR,
    DEPLOY,
    DOCKERFILES,
    K8S_VERSION,
    ROOT,
    _kubernetes_validate,
    _object,
    cpu_quantity,
    dockerfile_instructions,
    final_stage,
    one,
)

RAY = DEPLOY / "ray"
SERVE_YAML = RAY / "serve.yaml"
RAYSERVICE = RAY / "rayservice.yaml"
CONFIG = "pkg://configs/ocr.yml"
# `batchline ray build` flags each file was written with
KUBERAY_FLAGS = ("--host", "0.0.0.0", "--port", "8000")


# ---- readers --------------------------------------------------------------------------------
def rayservice_documents() -> list[dict]:
    return list(yaml.safe_load_all(RAYSERVICE.read_text(encoding="utf-8")))


def rayservice() -> dict:
    (doc,) = [d for d in rayservice_documents() if d["kind"] == "RayService"]
    return doc


def network_policy() -> dict:
    (doc,) = [d for d in rayservice_documents() if d["kind"] == "NetworkPolicy"]
    return doc


def below_header(text: str) -> str:
    """A YAML file without its leading comment lines (the header `batchline ray build` writes, or ours)."""
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "".join(lines)


def committed_serve_configs() -> dict[str, str]:
    """The Ray Serve configs in deploy/ray/ (text below the header), by the flags they were built with."""
    return {
        "": below_header(SERVE_YAML.read_text(encoding="utf-8")),
        " ".join(KUBERAY_FLAGS): rayservice()["spec"]["serveConfigV2"],
    }


def build_output(tmp_path: Path, *flags: str) -> str:
    from serving.cli import main

    out = tmp_path / "serve.yaml"
    assert main(["ray", "build", CONFIG, *flags, "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def config_documents(serve_config: dict) -> list[dict[str, Any]]:
    (app,) = serve_config["applications"]
    return app["args"]["configs"]


def image_args(path: Path) -> dict[str, str]:
    """ARG defaults of a Dockerfile, every stage (a later one wins)."""
    found = {}
    for word, args in dockerfile_instructions(path.read_text(encoding="utf-8")):
        if word == "ARG" and "=" in args:
            name, _, value = args.partition("=")
            found[name.strip()] = value.strip()
    return found


def image_config_path() -> str:
    """Where deploy/Dockerfile.ray's `pip install` puts configs/ocr.yml: the venv's site-packages."""
    instructions = dockerfile_instructions(DOCKERFILES["ray"].read_text(encoding="utf-8"))
    (venv,) = [m.group(1) for w, a in instructions if w == "RUN" and (m := re.search(r"python -m venv (\S+)", a))]
    python = re.match(r"python:(\d+\.\d+)", image_args(DOCKERFILES["ray"])["PYTHON_IMAGE"])
    assert python, "PYTHON_IMAGE is not a python:X.Y image: update this reader"
    return f"{venv}/lib/python{python.group(1)}/site-packages/configs/ocr.yml"


def groups() -> dict[str, dict]:
    """'head' and each worker group, by name."""
    cluster = rayservice()["spec"]["rayClusterConfig"]
    return {"head": cluster["headGroupSpec"], **{g["groupName"]: g for g in cluster["workerGroupSpecs"]}}


def ray_container(group: dict) -> dict:
    # KubeRay runs Ray in the first container
    return group["template"]["spec"]["containers"][0]


# ---- the Ray Serve configs ------------------------------------------------------------------
@pytest.mark.parametrize("flags", ["", " ".join(KUBERAY_FLAGS)], ids=["serve.yaml", "rayservice"])
def test_serve_configs_are_batchline_ray_build_output(tmp_path, flags):
    from serving.paths import resolve_pkg_path

    committed = committed_serve_configs()[flags]
    generated = below_header(build_output(tmp_path, *flags.split()))
    # the one key allowed to differ: `path`, the build machine's copy of the file
    here = resolve_pkg_path(CONFIG)
    for doc in config_documents(yaml.safe_load(generated)):
        assert doc["source"] == CONFIG and Path(doc["path"]).resolve() == Path(here).resolve()
    line = f"\n      path: {here}\n"
    assert generated.count(line) == 1, "the config's `path` line moved: update this test"
    generated = generated.replace(line, f"\n      path: {image_config_path()}\n")
    assert committed == generated, (
        f"deploy/ray/ drifted from `batchline ray build {CONFIG} {flags}`: regenerate it (see its header)"
    )


def test_the_committed_path_is_the_images_and_changes_nothing():
    """Replicas parse the embedded data; `path` would only anchor relative model paths and a
    default `name`, which configs/ocr.yml does not use: any path gives the same pipeline."""
    from serving.paths import resolve_pkg_path

    for text in committed_serve_configs().values():
        (doc,) = config_documents(yaml.safe_load(text))
        assert doc["path"] == image_config_path()
        here = parse_documents([ConfigDocument.from_dict({**doc, "path": resolve_pkg_path(CONFIG)})])
        committed = parse_documents([ConfigDocument.from_dict(doc)])
        assert committed.pipelines[0].op_table() == here.pipelines[0].op_table()
        assert committed.pipelines[0].name == "ocr"


@pytest.mark.parametrize("flags", ["", " ".join(KUBERAY_FLAGS)], ids=["serve.yaml", "rayservice"])
def test_serve_configs_pass_rays_schema_and_build_the_application(flags):
    from ray.serve.schema import ServeDeploySchema

    from serving.rayserve.app import build_app

    config = yaml.safe_load(committed_serve_configs()[flags])
    ServeDeploySchema.model_validate(config)  # what `serve deploy` checks first
    (app,) = config["applications"]
    assert app["import_path"] == "serving.rayserve.app:build_app"
    assert build_app(app["args"]) is not None  # parses the embedded config, binds every deployment


def test_serve_yaml_header_names_the_command_that_writes_it():
    header = SERVE_YAML.read_text(encoding="utf-8").split("\nproxy_location:")[0]
    assert f"batchline ray build {CONFIG} -o deploy/ray/serve.yaml" in header
    text = RAYSERVICE.read_text(encoding="utf-8").split("\napiVersion:")[0]
    assert f"batchline ray build {CONFIG} {' '.join(KUBERAY_FLAGS)}" in text


# ---- the RayService -------------------------------------------------------------------------
_STRINGS = {"type": "object", "additionalProperties": _STR}  # KubeRay's rayStartParams: map[string]string
_TEMPLATE = {"type": "object"}  # validated as a Kubernetes PodTemplateSpec (validate_rayservice)
RAYSERVICE_SCHEMA = _object(
    {
        "apiVersion": {"const": "ray.io/v1"},
        "kind": {"const": "RayService"},
        "metadata": _METADATA,
        "spec": _object(
            {
                "serveConfigV2": _STR,
                "rayClusterConfig": _object(
                    {
                        "rayVersion": {"type": "string", "pattern": r"^\d+\.\d+\.\d+$"},
                        "authOptions": _object({"mode": {"enum": ["disabled", "token"]}, "secretName": _STR}),
                        "enableInTreeAutoscaling": {"type": "boolean"},
                        "headGroupSpec": _object(
                            {
                                "rayStartParams": _STRINGS,
                                "serviceType": {"enum": ["ClusterIP", "NodePort", "LoadBalancer"]},
                                "template": _TEMPLATE,
                            },
                            ("template",),
                        ),
                        "workerGroupSpecs": {
                            "type": "array",
                            "minItems": 1,
                            "items": _object(
                                {
                                    "groupName": _STR,
                                    "replicas": _INT,
                                    "minReplicas": _INT,
                                    "maxReplicas": _INT,
                                    "rayStartParams": _STRINGS,
                                    "template": _TEMPLATE,
                                },
                                ("groupName", "template"),
                            ),
                        },
                    },
                    ("rayVersion", "headGroupSpec", "workerGroupSpecs"),
                ),
            },
            ("serveConfigV2", "rayClusterConfig"),
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)


def validate_rayservice(doc: dict) -> None:
    jsonschema.validate(doc, RAYSERVICE_SCHEMA)
    kv = _kubernetes_validate()
    cluster = doc["spec"]["rayClusterConfig"]
    templates = {"head": cluster["headGroupSpec"], **{g["groupName"]: g for g in cluster["workerGroupSpecs"]}}
    for name, group in templates.items():
        wrapped = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name}, "template": group["template"]}
        kv.validate(wrapped, K8S_VERSION, strict=True)


def test_rayservice_validates():
    try:
        validate_rayservice(rayservice())
    except jsonschema.ValidationError as exc:
        pytest.fail(f"{RAYSERVICE.relative_to(ROOT)}: {exc.message} at {list(exc.absolute_path)}")


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["spec"].update(serveConfig=d["spec"]["serveConfigV2"]),  # the v1alpha1 spelling
        lambda d: d["spec"]["rayClusterConfig"]["headGroupSpec"]["rayStartParams"].update({"num-cpus": 0}),
        lambda d: d["spec"]["rayClusterConfig"]["workerGroupSpecs"][0].update(minReplica=1),
        lambda d: ray_container(d["spec"]["rayClusterConfig"]["headGroupSpec"]).update(readinesProbe={}),
        lambda d: d["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"].update(volume=[]),
    ],
    ids=["serveConfig", "num-cpus-not-a-string", "minReplica", "readinesProbe", "volume"],
)
def test_validation_rejects_a_typo(edit):
    doc = copy.deepcopy(rayservice())
    edit(doc)
    with pytest.raises(jsonschema.ValidationError):
        validate_rayservice(doc)


def test_worker_cpus_hold_one_replica_of_every_deployment():
    """The head takes no replicas (num-cpus 0), so each worker pod must hold one replica of every
    deployment at the ray_actor_options the served config gives (those of serveConfigV2)."""
    config = yaml.safe_load(rayservice()["spec"]["serveConfigV2"])
    (app,) = config["applications"]
    deployments = {d["name"]: d for d in app["deployments"]}
    assert set(deployments) == {"ocr-det", "ocr-rec", "ingress", "metrics-hub"}
    per_replica = {name: d["ray_actor_options"].get("num_cpus", 1) for name, d in deployments.items()}
    assert all(d.get("num_replicas", 1) == 1 and "autoscaling_config" not in d for d in deployments.values())
    # CPU defaults of the op deployments: instance_num x thread_num (2 x 1 each in configs/ocr.yml)
    assert per_replica["ocr-det"] == per_replica["ocr-rec"] == 2.0 and per_replica["ingress"] == 1.0
    assert not any("num_gpus" in d["ray_actor_options"] for d in deployments.values())
    head, *workers = groups().values()
    assert head["rayStartParams"]["num-cpus"] == "0"
    assert workers
    for group in workers:
        resources = ray_container(group)["resources"]
        cpus = cpu_quantity(resources["limits"]["cpu"])
        assert cpu_quantity(resources["requests"]["cpu"]) == cpus == int(cpus)  # Guaranteed, whole CPUs
        assert resources["requests"]["memory"] == resources["limits"]["memory"]
        # KubeRay passes the CPU limit to `ray start --num-cpus` unless rayStartParams says otherwise
        ray_cpus = float(group["rayStartParams"].get("num-cpus", cpus))
        assert ray_cpus == cpus
        assert sum(per_replica.values()) <= ray_cpus * group["minReplicas"]
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]


def test_serve_port_host_and_image():
    spec = rayservice()["spec"]
    http = yaml.safe_load(spec["serveConfigV2"])["http_options"]
    assert http == {"host": "0.0.0.0", "port": 8000}
    images = set()
    for name, group in groups().items():
        container = ray_container(group)
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["serve"] == http["port"], name  # KubeRay's Serve service and probes use this port
        images.add(container["image"])
    assert len(images) == 1  # one Ray and one Python across the cluster
    # rayVersion is the image's Ray, and that Ray satisfies the `ray` extra
    import configparser

    from packaging.requirements import Requirement

    pinned = image_args(DOCKERFILES["ray"])["RAY_VERSION"]
    assert spec["rayClusterConfig"]["rayVersion"] == pinned
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    (extra,) = [Requirement(line) for line in parser["options.extras_require"]["ray"].split("\n") if line.strip()]
    assert extra.name == "ray" and "serve" in extra.extras and extra.specifier.contains(pinned)


def test_pods_leave_command_and_probes_to_kuberay_and_run_as_the_images_user():
    image_user = one(final_stage(dockerfile_instructions(DOCKERFILES["ray"].read_text(encoding="utf-8"))), "USER")
    for name, group in groups().items():
        spec = group["template"]["spec"]
        container = ray_container(group)
        # KubeRay writes `ray start ...` and its own Ray and Serve health probes
        assert not {"command", "args", "readinessProbe", "livenessProbe"} & set(container), name
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert str(spec["securityContext"]["runAsUser"]) == image_user.split(":")[0]
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        # Ray's object store and the predictor processes' batches: a memory /dev/shm
        shm = next(v for v in spec["volumes"] if v["name"] == "shm")
        assert shm["emptyDir"]["medium"] == "Memory"
        assert {m["mountPath"] for m in container["volumeMounts"] if m["name"] == "shm"} == {"/dev/shm"}


def test_ray_image_is_the_cpu_image_plus_the_ray_extra():
    ray_image = dockerfile_instructions(DOCKERFILES["ray"].read_text(encoding="utf-8"))
    cpu_image = dockerfile_instructions(DOCKERFILES["cpu"].read_text(encoding="utf-8"))
    assert image_args(DOCKERFILES["ray"])["PYTHON_IMAGE"] == image_args(DOCKERFILES["cpu"])["PYTHON_IMAGE"]
    runs = [shlex.split(args) for word, args in ray_image if word == "RUN" and "pip install" in args]
    assert len(runs) == 1, runs
    packages = [a for a in runs[0][2:] if not a.startswith("--")]
    # "./[ray]" is pip's ".[ray]" (the checkout with the extra); hadolint misreads the latter
    assert packages == ["./[ray]", "ray[serve]==${RAY_VERSION}"]

    def apt(instructions: list[tuple[str, str]]) -> set[str]:
        found = [re.search(r"apt-get install -y --no-install-recommends ([^&]+)", a) for w, a in instructions]
        return {p for m in found if m for p in m.group(1).split()}

    # the CPU image's libraries, plus wget for KubeRay's exec probes (`bash -c "wget ..."`;
    # bash itself is in the Debian base image, which this test cannot see)
    assert apt(final_stage(ray_image)) == apt(final_stage(cpu_image)) | {"wget"}


# ---- hostile traffic ------------------------------------------------------------------------
def containers_env(group: dict) -> dict[str, dict]:
    return {e["name"]: e for e in ray_container(group).get("env", [])}


def test_no_token_in_any_file_the_replicas_read_a_secret():
    """serve.yaml and serveConfigV2 (which Ray's dashboard shows) embed configs without a token;
    every pod that can run replicas (num-cpus not 0: the ingress may land there) takes
    BATCHLINE_AUTH_TOKEN, and optionally BATCHLINE_ADMIN_TOKEN, from a Secret, never a value."""
    from serving.config.errors import SECRET_KEYS

    for text in committed_serve_configs().values():
        for doc in config_documents(yaml.safe_load(text)):
            assert not set(SECRET_KEYS) & set(doc["data"]), doc["source"]
    assert {d["kind"] for d in rayservice_documents()} == {"RayService", "NetworkPolicy"}  # no Secret with data
    replica_groups = 0
    for name, group in groups().items():
        env = containers_env(group)
        assert not any("value" in e for e in env.values()), name  # only valueFrom
        if group["rayStartParams"].get("num-cpus") == "0":
            continue
        replica_groups += 1
        for var, optional in (("BATCHLINE_AUTH_TOKEN", False), ("BATCHLINE_ADMIN_TOKEN", True)):
            ref = env[var]["valueFrom"]["secretKeyRef"]
            assert ref["name"] == "batchline-auth" and ref.get("optional", False) is optional, (name, var)
    assert replica_groups >= 1


def test_ray_token_authentication_is_on_at_a_ray_that_has_it():
    """Ray's token auth came in Ray 2.52 (KubeRay's authOptions: 1.5.1): the RayService turns it
    on, and neither the image's Ray nor the `ray` extra's floor is older."""
    import configparser

    from packaging.requirements import Requirement
    from packaging.version import Version

    cluster = rayservice()["spec"]["rayClusterConfig"]
    assert cluster["authOptions"] == {"mode": "token"}
    assert Version(cluster["rayVersion"]) >= Version("2.52.0")
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    for extra in ("ray", "test"):
        lines = [line for line in parser["options.extras_require"][extra].split("\n") if line.startswith("ray")]
        (requirement,) = [Requirement(line) for line in lines]
        floors = [Version(spec.version) for spec in requirement.specifier if spec.operator == ">="]
        assert floors and min(floors) >= Version("2.52"), (extra, str(requirement))


def test_network_policy_opens_only_the_serve_port():
    policy = network_policy()
    _kubernetes_validate().validate(policy, K8S_VERSION, strict=True)
    selector = policy["spec"]["podSelector"]["matchLabels"]
    for name, group in groups().items():  # it selects every Ray pod of the RayService
        labels = group["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items(), name
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    serve_port = yaml.safe_load(rayservice()["spec"]["serveConfigV2"])["http_options"]["port"]
    open_rules = [rule for rule in policy["spec"]["ingress"] if "from" not in rule]
    assert [rule["ports"] for rule in open_rules] == [[{"port": serve_port, "protocol": "TCP"}]]
    for rule in policy["spec"]["ingress"]:
        if "from" not in rule:
            continue
        for peer in rule["from"]:
            assert "ipBlock" not in peer
            if "namespaceSelector" in peer:  # another namespace: only the KubeRay operator, only the dashboard
                assert peer["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "kuberay-operator"}
                assert rule["ports"] == [{"port": 8265, "protocol": "TCP"}]
            else:  # the same namespace: only this RayService's pods
                assert peer["podSelector"]["matchLabels"] == selector


def test_service_account_tokens_stay_out_of_the_replicas_pods():
    """No Kubernetes credentials where replicas parse clients' requests; the head keeps its
    token only for the in-tree autoscaler, which calls the Kubernetes API."""
    cluster = rayservice()["spec"]["rayClusterConfig"]
    for name, group in groups().items():
        mounted = group["template"]["spec"]["automountServiceAccountToken"]
        if name == "head":
            assert mounted is bool(cluster.get("enableInTreeAutoscaling"))
        else:
            assert mounted is False, name


def test_the_dashboard_is_never_bound_to_every_address_by_us():
    """KubeRay binds it to the pod (its operator deploys through it; the NetworkPolicy fences it);
    nothing here or in the docs widens that: the docs reach it with kubectl port-forward."""
    for name, group in groups().items():
        assert group["rayStartParams"].get("dashboard-host", "127.0.0.1") != "0.0.0.0", name
    deploy_md = (ROOT / "docs" / "DEPLOY.md").read_text(encoding="utf-8")
    assert not re.search(r"dashboard[-_]host[= ]+0\.0\.0\.0", deploy_md)
    assert "kubectl port-forward" in deploy_md and "8265" in deploy_md


@pytest.mark.parametrize("flags", ["", " ".join(KUBERAY_FLAGS)], ids=["serve.yaml", "rayservice"])
def test_every_deployment_bounds_its_queue(flags):
    """Ray Serve's default max_queued_requests (-1) lets calls wait in each caller without end."""
    (app,) = yaml.safe_load(committed_serve_configs()[flags])["applications"]
    queued = {d["name"]: d["max_queued_requests"] for d in app["deployments"]}
    assert set(queued) == {"ocr-det", "ocr-rec", "ingress", "metrics-hub"}
    assert all(isinstance(n, int) and n >= 1 for n in queued.values()), queued
