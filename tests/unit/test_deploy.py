"""The deployment kit (deploy/, docs/DEPLOY.md) agrees with the code and config it deploys.

No Docker engine and no cluster: the Dockerfiles are linted (hadolint) and read, the
Kubernetes manifests are validated against the schemas of a pinned Kubernetes release
(kubernetes-validate, strict: unknown fields fail), and every number that derives from
the served config is recomputed from that config with batchline's own loader:

* built-in kinds (ConfigMap, Deployment, Service, HorizontalPodAutoscaler): the official
  OpenAPI schemas of Kubernetes ``K8S_VERSION``;
* CRDs (KEDA ScaledObject, prometheus-operator ServiceMonitor), which are in no Kubernetes
  schema: a small JSON schema of exactly the fields we use (``CRD_SCHEMAS``, unknown fields
  rejected), and the ScaledObject's HPA behaviour through the Kubernetes HPA schema. Not
  validated: the rest of those CRDs, and whether KEDA / the operator accept the objects;
* the prometheus-adapter Helm values are not a manifest: checked for the rule the HPA needs.

deploy/ray/ (KubeRay RayService, Ray Serve config) has its own file, test_deploy_ray.py; its
image, deploy/Dockerfile.ray, is linted and checked here with the others.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from serving.cli import build_parser
from serving.config import ServingConfig, load_config
from tests.support.tools import installed_tool

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
DOCKERFILES = {"cpu": DEPLOY / "Dockerfile", "gpu": DEPLOY / "Dockerfile.gpu", "ray": DEPLOY / "Dockerfile.ray"}
UNIT = DEPLOY / "systemd" / "batchline.service"
# The Kubernetes release the manifests are written for (docs/DEPLOY.md says which).
K8S_VERSION = "1.34.0"
# YAML under deploy/k8s/ that is deliberately not a Kubernetes manifest
NOT_MANIFESTS = {K8S / "prometheus-adapter" / "values.yaml"}
# flags a container adds to the README's `batchline serve`, and the value it must give them
CONTAINER_FLAGS = {"host": "0.0.0.0"}


def _kubernetes_validate() -> Any:
    try:
        import kubernetes_validate
    except ImportError:
        pytest.fail("kubernetes-validate is not installed: pip install -e '.[test]'")
    return kubernetes_validate


# ---- readers --------------------------------------------------------------------------------
def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order: comments dropped, continuation lines joined."""
    out: list[tuple[str, str]] = []
    logical = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not logical and (not line or line.startswith("#")):
            continue
        if logical and line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        logical += line
        word, _, rest = logical.partition(" ")
        out.append((word.upper(), rest.strip()))
        logical = ""
    return out


def final_stage(instructions: list[tuple[str, str]]) -> list[tuple[str, str]]:
    starts = [i for i, (word, _) in enumerate(instructions) if word == "FROM"]
    return instructions[starts[-1] :]


def exec_form(args: str) -> list[str]:
    """An instruction's JSON (exec) form; shell form fails: it would put /bin/sh in front of the
    server, and sh does not pass SIGTERM on."""
    value = json.loads(args)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), args
    return value


def one(instructions: list[tuple[str, str]], word: str) -> str:
    found = [args for w, args in instructions if w == word]
    assert found, f"no {word}"
    return found[-1]  # the one that takes effect


def image_argv(path: Path) -> list[str]:
    """What the container runs: ENTRYPOINT + CMD, with an init (tini --) taken off."""
    stage = final_stage(dockerfile_instructions(path.read_text(encoding="utf-8")))
    argv = exec_form(one(stage, "ENTRYPOINT")) + exec_form(one(stage, "CMD"))
    if argv[:2] == ["tini", "--"]:
        argv = argv[2:]
    return argv


def readme_quick_start() -> tuple[list[str], list[str]]:
    """The README's first quick-start command, ``<pip install ...> && batchline serve ...``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(?:bash|sh)?\n(.*?)```", text, re.S)
    lines = [line.strip() for b in blocks for line in b.splitlines() if "pip install" in line and "serve" in line]
    assert len(lines) == 1, lines
    install, serve = (shlex.split(part) for part in lines[0].split("&&"))
    return install, serve


def serve_args(argv: list[str]) -> dict[str, Any]:
    """``batchline serve ...`` parsed by batchline's own command-line parser."""
    assert argv[:2] == ["batchline", "serve"], argv
    return vars(build_parser(argv[1:]).parse_args(argv[1:]))


def manifests() -> list[tuple[Path, dict]]:
    found = []
    for path in sorted(K8S.rglob("*.y*ml")):
        if path in NOT_MANIFESTS:
            continue
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
        assert docs, path
        for doc in docs:
            assert {"apiVersion", "kind", "metadata"} <= set(doc), f"{path}: not a Kubernetes manifest"
            found.append((path, doc))
    return found


def manifest(kind: str, directory: Path = K8S) -> dict:
    docs = [doc for path, doc in manifests() if doc["kind"] == kind and path.parent == directory]
    assert len(docs) == 1, f"{kind} in {directory}: {len(docs)}"
    return docs[0]


def container() -> dict:
    containers = manifest("Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def configmap_config(tmp_path: Path) -> ServingConfig:
    """The ConfigMap's config file, loaded by batchline the way a pod loads the mounted file."""
    data = manifest("ConfigMap")["data"]
    assert list(data) == ["config.yml"]
    path = tmp_path / "config.yml"
    path.write_text(data["config.yml"], encoding="utf-8")
    return load_config(path)


def cpu_quantity(value: str | int) -> float:
    text = str(value)
    return int(text[:-1]) / 1000 if text.endswith("m") else float(text)


def http_drain_tail_s() -> float:
    """Worst case the HTTP layer adds after the pipelines drained: the timeouts of either HTTP
    front's drain (in the engine's process), or the front processes' (http.front_workers)."""
    from serving.http.front_processes.workers import DRAIN_TIMEOUT_S
    from serving.http.http_server import HttpServer

    tails = []
    for front in (HttpServer,):
        source = inspect.getsource(front.drain)
        timeouts = [float(t) for t in re.findall(r"timeout=(\d+(?:\.\d+)?)", source)]
        assert timeouts, f"{front.__name__}.drain has no literal timeouts any more: update this reader"
        assert sum(timeouts) <= DRAIN_TIMEOUT_S, "a front process is killed before its own drain can end"
        tails.append(sum(timeouts))
    return max(*tails, DRAIN_TIMEOUT_S)


def drain_s(config: ServingConfig) -> float:
    return config.dag.shutdown_timeout_s + http_drain_tail_s()


def unit_settings(text: str) -> dict[str, dict[str, list[str]]]:
    """A systemd unit: section -> key -> values (keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, _, value = line.partition("=")
        assert current is not None, line
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


# ---- Dockerfiles ----------------------------------------------------------------------------
def _hadolint(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [installed_tool("hadolint"), "--config", str(ROOT / ".hadolint.yaml"), str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("variant", sorted(DOCKERFILES))
def test_hadolint_passes(variant):
    out = _hadolint(DOCKERFILES[variant])
    assert out.returncode == 0, out.stdout + out.stderr


def test_hadolint_fails_a_bad_dockerfile(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN apt-get install curl\nCMD batchline serve\n", encoding="utf-8")
    out = _hadolint(bad)
    assert out.returncode != 0
    assert "DL3006" in out.stdout  # untagged base image


def test_image_runs_the_readme_serve_command_with_container_flags_only():
    install, serve = readme_quick_start()
    argv = image_argv(DOCKERFILES["cpu"])
    readme_args, image_args = serve_args(serve), serve_args(argv)
    for flag, value in CONTAINER_FLAGS.items():
        assert image_args.pop(flag) == value
        readme_args.pop(flag)
    assert image_args == readme_args  # same config default, same everything else
    assert image_args["config"] == ["pkg://configs/ocr.yml"]


def test_image_installs_the_checkout_like_the_quick_start():
    install, _ = readme_quick_start()
    instructions = dockerfile_instructions(DOCKERFILES["cpu"].read_text(encoding="utf-8"))
    runs = [shlex.split(args) for word, args in instructions if word == "RUN" and "pip install" in args]
    assert len(runs) == 1, runs
    # the README installs editable (a developer's checkout); an image installs a plain copy
    readme = [a for a in install if a != "-e"]
    image = [a for a in runs[0] if not a.startswith("--")]
    assert readme == image == ["pip", "install", "."]
    copies = [args for word, args in instructions if word == "COPY" and "--from" not in args]
    assert copies == [". ."]  # the whole build context (the repository root), then pip install .


def test_gpu_image_serves_the_gpu_config():
    args = serve_args(image_argv(DOCKERFILES["gpu"]))
    assert args["host"] == CONTAINER_FLAGS["host"]
    (config_path,) = args["config"]
    config = load_config(config_path)
    for op in config.ops:
        conf = op.local_service_conf
        assert conf.device_type in (1, 2) and conf.devices, op.name
    text = DOCKERFILES["gpu"].read_text(encoding="utf-8")
    assert "UNTESTED HERE" in text
    assert all(op.local_service_conf.engine == "torch" for op in config.ops)
    # the models converted into the ONNX cache in a first stage, which the image copies
    instructions = dockerfile_instructions(text)
    stages = image_stages(instructions)
    assert len(stages) == 2
    convert, image = stages
    assert any("serving.runners.onnx_export pkg://configs/ocr_gpu.yml" in a for w, a in convert if w == "RUN")
    assert ("COPY", "--from=convert /opt/batchline/onnx /opt/batchline/onnx") in image
    for stage in stages:
        env = " ".join(args for word, args in stage if word == "ENV")
        assert "BATCHLINE_ONNX_CACHE=/opt/batchline/onnx" in env


# setup.cfg's requirements the GPU image leaves out, each for a reason
GPU_IMAGE_LEAVES_OUT = {
    "paddlepaddle": "Paddle Inference, a CPU engine here; Paddle only converts the models, in the first stage",
    "paddleocr": "PaddleOCR is the reference the OCR ops are held to, never imported by them",
    "openvino": "OpenVINO Runtime, the CPU engine",
    "opencv-python": "the image takes the headless build (no display, no libGL)",
    "opencv-contrib-python": "the image takes the headless build (no display, no libGL)",
}
# what the GPU image installs that install_requires does not name
GPU_IMAGE_ADDS = {"onnx", "opencv-python-headless"}


def requirement_names(lines: list[str]) -> set[str]:
    from packaging.requirements import Requirement

    names = set()
    for line in lines:
        line = line.split("#")[0].strip()
        if line:
            names.add(Requirement(line).name.lower())
    return names


def test_the_gpu_image_installs_only_what_the_gpu_path_needs():
    import configparser

    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg", encoding="utf-8")
    core = requirement_names(setup["options"]["install_requires"].splitlines())
    gpu = requirement_names((DEPLOY / "requirements-gpu.txt").read_text(encoding="utf-8").splitlines())
    assert set(GPU_IMAGE_LEAVES_OUT) <= core  # each named exclusion is still a requirement
    assert gpu == (core - set(GPU_IMAGE_LEAVES_OUT)) | GPU_IMAGE_ADDS, "classify the new requirement"
    instructions = dockerfile_instructions(DOCKERFILES["gpu"].read_text(encoding="utf-8"))
    image = image_stages(instructions)[-1]
    installs = [shlex.split(args) for word, args in image if word == "RUN" and "pip install" in args]
    (install,) = installs
    commands = " ".join(install).split("&&")
    assert [c.split() for c in commands if "pip" in c] == [
        ["python", "-m", "pip", "install", "--no-cache-dir", "-r", "deploy/requirements-gpu.txt"],
        ["python", "-m", "pip", "install", "--no-cache-dir", "--no-deps", "."],
    ]


def image_stages(instructions: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The instructions of each ``FROM`` stage, in order (ARGs before the first FROM left out)."""
    stages: list[list[tuple[str, str]]] = []
    for word, args in instructions:
        if word == "FROM":
            stages.append([])
        elif stages:
            stages[-1].append((word, args))
    return stages


@pytest.mark.parametrize("variant", sorted(DOCKERFILES))
def test_image_user_healthcheck_and_signals(variant):
    stage = final_stage(dockerfile_instructions(DOCKERFILES[variant].read_text(encoding="utf-8")))
    user = one(stage, "USER").split(":")[0]
    assert user not in {"root", "0"}
    args = serve_args(image_argv(DOCKERFILES[variant]))
    port = load_config(args["config"][0]).http_port
    assert one(stage, "EXPOSE").split() == [str(port)]
    health = one(stage, "HEALTHCHECK")
    check = exec_form(health[health.index("CMD") + len("CMD") :].strip())
    assert f"http://127.0.0.1:{port}/health/live" in " ".join(check), check
    assert one(stage, "STOPSIGNAL") == "SIGTERM"
    entrypoint = exec_form(one(stage, "ENTRYPOINT"))
    if entrypoint[0] == "tini":
        assert any(word == "RUN" and re.search(r"apt-get install .*\btini\b", a) for word, a in stage)


def test_stop_timeouts_in_the_docs_cover_the_drain():
    """`docker stop` waits 10 s by default: every docker run we show must give the drain its time."""
    drain = drain_s(load_config("pkg://configs/ocr.yml"))
    texts = [p.read_text(encoding="utf-8") for p in [*DOCKERFILES.values(), ROOT / "docs" / "DEPLOY.md"]]
    runs = [line for text in texts for line in text.splitlines() if re.match(r"\s*(#\s*)?docker run ", line)]
    assert runs
    for line in runs:
        found = re.search(r"--stop-timeout[= ](\d+)", line)
        assert found and int(found.group(1)) > drain, line


# ---- Kubernetes -----------------------------------------------------------------------------
CRD_SCHEMAS: dict[tuple[str, str], dict] = {}


def _object(properties: dict, required: tuple[str, ...] = ()) -> dict:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 0}
_METADATA = _object(
    {"name": _STR, "namespace": _STR, "labels": {"type": "object", "additionalProperties": _STR}}, ("name",)
)
CRD_SCHEMAS[("keda.sh/v1alpha1", "ScaledObject")] = _object(
    {
        "apiVersion": _STR,
        "kind": _STR,
        "metadata": _METADATA,
        "spec": _object(
            {
                "scaleTargetRef": _object({"name": _STR, "kind": _STR, "apiVersion": _STR}, ("name",)),
                "minReplicaCount": _INT,
                "maxReplicaCount": _INT,
                "pollingInterval": _INT,
                "cooldownPeriod": _INT,
                "advanced": _object(
                    {"horizontalPodAutoscalerConfig": _object({"behavior": {"type": "object"}, "name": _STR})}
                ),
                "triggers": {
                    "type": "array",
                    "minItems": 1,
                    "items": _object(
                        {
                            "type": {"const": "prometheus"},
                            "name": _STR,
                            "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
                            "metadata": _object(
                                {"serverAddress": _STR, "query": _STR, "threshold": _STR, "activationThreshold": _STR},
                                ("serverAddress", "query", "threshold"),
                            ),
                        },
                        ("type", "metadata"),
                    ),
                },
            },
            ("scaleTargetRef", "triggers"),
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)
CRD_SCHEMAS[("monitoring.coreos.com/v1", "ServiceMonitor")] = _object(
    {
        "apiVersion": _STR,
        "kind": _STR,
        "metadata": _METADATA,
        "spec": _object(
            {
                "selector": _object({"matchLabels": {"type": "object", "additionalProperties": _STR}}),
                "namespaceSelector": _object(
                    {"matchNames": {"type": "array", "items": _STR}, "any": {"type": "boolean"}}
                ),
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": _object(
                        {
                            "port": _STR,
                            "path": _STR,
                            "interval": {"type": "string", "pattern": r"^\d+(ms|s|m|h)$"},
                            # SafeAuthorization: a bearer token from a Secret of the monitor's namespace
                            "authorization": _object(
                                {
                                    "type": {"const": "Bearer"},
                                    "credentials": _object({"name": _STR, "key": _STR}, ("name", "key")),
                                },
                                ("credentials",),
                            ),
                        },
                        ("port",),
                    ),
                },
            },
            ("selector", "endpoints"),
        ),
    },
    ("apiVersion", "kind", "metadata", "spec"),
)


def validate_manifest(doc: dict) -> None:
    kv = _kubernetes_validate()
    key = (doc["apiVersion"], doc["kind"])
    if key in CRD_SCHEMAS:
        jsonschema.validate(doc, CRD_SCHEMAS[key])
        if key == ("keda.sh/v1alpha1", "ScaledObject"):  # its behaviour is the Kubernetes HPA type
            behavior = doc["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
            hpa = copy.deepcopy(manifest("HorizontalPodAutoscaler"))
            hpa["spec"]["behavior"] = behavior
            kv.validate(hpa, K8S_VERSION, strict=True)
        return
    kv.validate(doc, K8S_VERSION, strict=True)  # SchemaNotFoundError: a kind nobody checks


def test_every_manifest_validates():
    docs = manifests()
    kinds = sorted(doc["kind"] for _, doc in docs)
    expected = [
        "ConfigMap",
        "Deployment",
        "HorizontalPodAutoscaler",
        "NetworkPolicy",
        "ScaledObject",
        "Service",
        "ServiceMonitor",
    ]
    assert kinds == expected
    for path, doc in docs:
        try:
            validate_manifest(doc)
        except jsonschema.ValidationError as exc:
            pytest.fail(f"{path.relative_to(ROOT)}: {exc.message} at {list(exc.absolute_path)}")


@pytest.mark.parametrize(
    ("kind", "edit"),
    [
        ("Deployment", lambda d: d["spec"]["template"]["spec"]["containers"][0].update(readinesProbe={})),
        ("Deployment", lambda d: d["spec"]["template"]["spec"].update(terminationGracePeriodSeconds="75")),
        ("HorizontalPodAutoscaler", lambda d: d["spec"]["metrics"][0]["pods"]["target"].update(averagevalue="4")),
        ("ScaledObject", lambda d: d["spec"].update(minReplicas=2)),
        ("ScaledObject", lambda d: d["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"].update(up={})),
        ("ServiceMonitor", lambda d: d["spec"]["endpoints"][0].update(scrapeInterval="15s")),
        ("NetworkPolicy", lambda d: d["spec"].update(podselector={})),
    ],
)
def test_validation_rejects_a_typo(kind, edit):
    doc = copy.deepcopy(next(doc for _, doc in manifests() if doc["kind"] == kind))
    edit(doc)
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest(doc)


def test_configmap_holds_configs_ocr_yml(tmp_path):
    """No key is changed on purpose (the container's --host comes from the command line), so
    the ConfigMap's file must equal configs/ocr.yml key for key; comments may differ."""
    shipped = yaml.safe_load((ROOT / "configs" / "ocr.yml").read_text(encoding="utf-8"))
    served = yaml.safe_load(manifest("ConfigMap")["data"]["config.yml"])
    assert served == shipped
    assert configmap_config(tmp_path).name == "ocr"


def test_deployment_serves_the_configmap_with_container_flags_only(tmp_path):
    config = configmap_config(tmp_path)
    spec = manifest("Deployment")["spec"]["template"]["spec"]
    c = container()
    # the image's ENTRYPOINT is `tini -- batchline`, so args start at the subcommand
    assert image_argv(DOCKERFILES["cpu"])[0] == "batchline"
    args = serve_args(["batchline", *c["args"]])
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    volume = next(
        v for v in spec["volumes"] if v.get("configMap", {}).get("name") == manifest("ConfigMap")["metadata"]["name"]
    )
    assert args["config"] == [f"{mounts[volume['name']]}/config.yml"]
    assert args["host"] == CONTAINER_FLAGS["host"] and args["port"] is None
    assert [p["containerPort"] for p in c["ports"] if p["name"] == "http"] == [config.http_port]


def test_deployment_cpu_is_the_configs_thread_budget(tmp_path):
    config = configmap_config(tmp_path)
    budget = sum(op.local_service_conf.instance_num * op.local_service_conf.thread_num for op in config.ops)
    resources = container()["resources"]
    assert cpu_quantity(resources["requests"]["cpu"]) == cpu_quantity(resources["limits"]["cpu"]) == budget
    # Guaranteed QoS (requests == limits, whole CPUs): the static CPU manager's exclusive cores
    assert resources["requests"]["memory"] == resources["limits"]["memory"]
    assert budget == int(budget)


def test_probes_and_grace_period_fit_the_server(tmp_path):
    from serving.http.app import create_app
    from tests.support.http_fakes import echo_pipeline

    config = configmap_config(tmp_path)
    spec = manifest("Deployment")["spec"]["template"]["spec"]
    c = container()
    served = {rule.rule for rule in create_app(echo_pipeline()).url_map.iter_rules() if "GET" in (rule.methods or ())}
    for probe, path in (("readinessProbe", "/health/ready"), ("livenessProbe", "/health/live")):
        get = c[probe]["httpGet"]
        assert get["path"] == path and path in served
        assert get["port"] in {p["name"] for p in c["ports"]} | {config.http_port}
    pre_stop = c["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert spec["terminationGracePeriodSeconds"] > pre_stop + drain_s(config)
    # /dev/shm carries the predictor processes' batches: not the runtime's 64 MiB default
    shm = next(v for v in spec["volumes"] if v["name"] == "shm")
    assert shm["emptyDir"]["medium"] == "Memory"
    assert {m["mountPath"] for m in c["volumeMounts"] if m["name"] == "shm"} == {"/dev/shm"}


def test_pods_run_as_the_images_non_root_user():
    spec = manifest("Deployment")["spec"]["template"]["spec"]
    image_user = one(final_stage(dockerfile_instructions(DOCKERFILES["cpu"].read_text(encoding="utf-8"))), "USER")
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert str(spec["securityContext"]["runAsUser"]) == image_user.split(":")[0]
    assert container()["securityContext"]["allowPrivilegeEscalation"] is False


# ---- hardening (issue 25) --------------------------------------------------------------------
TOKEN_VARS = {"BATCHLINE_AUTH_TOKEN": True, "BATCHLINE_ADMIN_TOKEN": False}  # name -> required
SECRET_NAME = "batchline-auth"


def token_refs() -> dict[str, dict]:
    """The container's token variables: name -> its secretKeyRef."""
    env = {e["name"]: e for e in container().get("env", [])}
    refs = {}
    for name in TOKEN_VARS:
        assert name in env, f"{name} not in the container's env"
        assert "value" not in env[name], f"{name}: a literal token in the manifest"
        refs[name] = env[name]["valueFrom"]["secretKeyRef"]
    return refs


def test_tokens_come_from_a_secret_never_from_a_literal():
    refs = token_refs()
    for name, required in TOKEN_VARS.items():
        assert refs[name]["name"] == SECRET_NAME
        assert refs[name].get("optional", False) is not required, name
    # no manifest carries a Secret (its data would be a token in the repository), nor any
    # literal value for a variable that holds a token; the Dockerfiles set none either
    assert "Secret" not in {doc["kind"] for _, doc in manifests()}
    for path, doc in manifests():
        env = [
            e
            for c in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
            for e in c.get("env", [])
        ]
        assert not [e["name"] for e in env if "TOKEN" in e["name"] and "value" in e], path
    for variant, path in DOCKERFILES.items():
        envs = [
            args for word, args in dockerfile_instructions(path.read_text(encoding="utf-8")) if word in ("ENV", "ARG")
        ]
        assert not [e for e in envs if "TOKEN" in e], variant
    # the documented way to make the Secret uses the same name and keys
    deploy_md = (ROOT / "docs" / "DEPLOY.md").read_text(encoding="utf-8")
    assert f"kubectl create secret generic {SECRET_NAME}" in deploy_md
    assert all(f"{ref['key']}=" in deploy_md for ref in refs.values())


def test_metrics_scrape_carries_the_token():
    (endpoint,) = manifest("ServiceMonitor", K8S / "monitoring")["spec"]["endpoints"]
    assert endpoint["authorization"]["credentials"] == {
        "name": SECRET_NAME,
        "key": token_refs()["BATCHLINE_AUTH_TOKEN"]["key"],
    }


def test_pods_mount_no_service_account_token_and_run_hardened():
    spec = manifest("Deployment")["spec"]["template"]["spec"]
    assert spec["automountServiceAccountToken"] is False
    ctx = {**spec["securityContext"], **container()["securityContext"]}
    assert ctx["runAsNonRoot"] is True and ctx["readOnlyRootFilesystem"] is True
    assert ctx["allowPrivilegeEscalation"] is False and ctx["capabilities"]["drop"] == ["ALL"]
    assert ctx["seccompProfile"] == {"type": "RuntimeDefault"}
    # a read-only root needs writable emptyDirs where the server writes (TMPDIR spools bodies)
    mounts = {m["mountPath"]: m["name"] for m in container()["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    for path in ("/tmp", "/dev/shm", "/home/batchline"):
        assert "emptyDir" in volumes[mounts[path]], path


def test_network_policy_admits_only_the_http_port_to_the_server_pods():
    policy = manifest("NetworkPolicy")["spec"]
    labels = manifest("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["policyTypes"] == ["Ingress"]
    http = next(p for p in container()["ports"] if p["name"] == "http")
    for rule in policy["ingress"]:
        assert rule["ports"] and all(p["port"] in (http["name"], http["containerPort"]) for p in rule["ports"])
        assert rule["from"], "a rule without `from` admits every source"
    # Prometheus' namespace may scrape /metrics (on the same port)
    sources = [
        peer.get("namespaceSelector", {}).get("matchLabels", {}) for r in policy["ingress"] for peer in r["from"]
    ]
    assert {"kubernetes.io/metadata.name": "monitoring"} in sources


def test_served_config_has_a_header_deadline(tmp_path):
    from serving.config.file_set import repository_of

    http = repository_of(configmap_config(tmp_path)).http
    # a public endpoint closes connections whose headers trickle in (slow-loris) within ~10 s
    assert http.header_timeout_s <= 10 < http.request_timeout_s


def byte_quantity(value: str) -> int:
    """A Kubernetes memory/storage quantity (binary suffixes, as the manifests write them) in bytes."""
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    suffix = value[-2:]
    return int(value[:-2]) * units[suffix] if suffix in units else int(value)


def test_tmp_holds_the_served_configs_body_budget(tmp_path):
    """/tmp holds the server's body budget (http.max_buffered_mb), as it did when waitress spooled
    request bodies there (the asyncio front keeps them in memory): a disk-backed emptyDir, sized to it."""
    from serving.config.file_set import repository_of
    from serving.service.body_budget import buffered_bytes
    from serving.service.limits import limits_from_config

    config = configmap_config(tmp_path)
    budget = buffered_bytes(repository_of(config).http.max_buffered_mb, limits_from_config(config).max_body_size)
    spec = manifest("Deployment")["spec"]["template"]["spec"]
    mounts = {m["mountPath"]: m["name"] for m in container()["volumeMounts"]}
    tmp = next(v for v in spec["volumes"] if v["name"] == mounts["/tmp"])
    assert "medium" not in tmp["emptyDir"], "an in-memory /tmp would count the bodies against the memory limit"
    assert byte_quantity(tmp["emptyDir"]["sizeLimit"]) >= budget


def test_service_reaches_the_pods():
    service, deployment = manifest("Service"), manifest("Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    names = {p["name"] for p in container()["ports"]}
    assert all(p["targetPort"] in names for p in service["spec"]["ports"])
    monitor = manifest("ServiceMonitor", K8S / "monitoring")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= {p["name"] for p in service["spec"]["ports"]}
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/path"] == "/metrics"
    assert int(annotations["prometheus.io/port"]) == next(p["containerPort"] for p in container()["ports"])


def _metric_types() -> dict[str, str]:
    from serving.batching.metrics import Metrics

    return {family.name: family.type for family in Metrics().registry.collect()}


def _adapter_rules() -> dict[str, dict]:
    """prometheus-adapter rules by the metric name they serve (the rule's name.as applied)."""
    values = yaml.safe_load((K8S / "prometheus-adapter" / "values.yaml").read_text(encoding="utf-8"))
    assert values["rules"]["default"] is False
    served = {}
    for rule in values["rules"]["custom"]:
        series = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", rule["seriesQuery"]).group(0)
        name = re.sub(rule["name"]["matches"], rule["name"]["as"].replace("${1}", r"\1"), series)
        assert name != series or rule["name"]["matches"] == "^(.*)$"
        overrides = rule["resources"]["overrides"]
        assert overrides == {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}
        served[name] = {**rule, "series": series}
    return served


def test_hpa_scales_on_a_gauge_the_adapter_serves():
    hpa = manifest("HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["name"] == manifest("Deployment")["metadata"]["name"]
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "Pods" and metric["pods"]["target"]["type"] == "AverageValue"
    rules = _adapter_rules()
    rule = rules[metric["pods"]["metric"]["name"]]
    types = _metric_types()
    # averaging over time is right for a gauge, wrong for a counter
    assert rule["series"] == "batchline_requests_in_flight" and types[rule["series"]] == "gauge"
    assert "avg_over_time(<<.Series>>" in rule["metricsQuery"]
    # the alternative rule reads the queue-wait histogram's sum and count
    wait = rules["batchline_op_queue_wait_seconds_mean_1m"]
    assert types["batchline_op_queue_wait_seconds"] == "histogram"
    assert wait["series"] == "batchline_op_queue_wait_seconds_sum"
    assert "batchline_op_queue_wait_seconds_count" in wait["metricsQuery"]


def test_keda_alternative_matches_the_hpa():
    hpa = manifest("HorizontalPodAutoscaler")["spec"]
    keda = manifest("ScaledObject", K8S / "keda")["spec"]
    assert keda["scaleTargetRef"]["name"] == hpa["scaleTargetRef"]["name"]
    assert (keda["minReplicaCount"], keda["maxReplicaCount"]) == (hpa["minReplicas"], hpa["maxReplicas"])
    assert keda["advanced"]["horizontalPodAutoscalerConfig"]["behavior"] == hpa["behavior"]
    (trigger,) = keda["triggers"]
    assert trigger["metricType"] == "AverageValue"
    assert trigger["metadata"]["threshold"] == hpa["metrics"][0]["pods"]["target"]["averageValue"]
    assert re.search(r"avg_over_time\(batchline_requests_in_flight\{[^}]*\}\[1m\]\)", trigger["metadata"]["query"])


# ---- systemd --------------------------------------------------------------------------------
def test_systemd_unit_drains_reloads_and_restarts():
    unit = unit_settings(UNIT.read_text(encoding="utf-8"))
    service = {key: values[-1] for key, values in unit["Service"].items()}
    assert service["Type"] == "simple"
    assert service["KillSignal"] == "SIGTERM"
    assert service["KillMode"] == "mixed"  # SIGTERM to the server only; it stops its predictor processes
    assert service["ExecReload"] == "/bin/kill -HUP $MAINPID"
    assert service["Restart"] == "on-failure"
    assert service["User"] not in {"root", "0"}
    assert service.get("MemoryDenyWriteExecute", "no") == "no"  # breaks oneDNN's and OpenVINO's JIT
    argv = shlex.split(service["ExecStart"])
    assert Path(argv[0]).name == "batchline"
    args = serve_args(["batchline", *argv[1:]])
    assert args["config"] == ["/etc/batchline/"]
    drain = drain_s(load_config("pkg://configs/ocr.yml"))
    assert float(service["TimeoutStopSec"].rstrip("s")) > drain


def test_systemd_accepts_the_unit(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not on this machine (a system tool, not a pip package)")
    unit = UNIT.read_text(encoding="utf-8")
    # the unit's binary and user exist only where it is installed: verify with ours
    unit = re.sub(r"^ExecStart=\S+", f"ExecStart={sys.executable}", unit, flags=re.M)
    (tmp_path / "batchline.service").write_text(unit, encoding="utf-8")
    out = subprocess.run(
        [analyze, "verify", str(tmp_path / "batchline.service")], capture_output=True, text=True, timeout=60
    )
    complaints = [line for line in (out.stdout + out.stderr).splitlines() if "batchline.service" in line]
    assert out.returncode == 0 and not complaints, out.stdout + out.stderr


def test_deploy_md_is_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/DEPLOY.md)" in readme
