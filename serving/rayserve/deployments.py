"""Names and Ray Serve options of the deployments a repository of configs becomes: one
per op (per share name for shared ops), the HTTP ingress and the metrics hub. Plain
data, so ``batchline ray build`` writes exactly what ``batchline serve --ray`` deploys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from serving.config.errors import ConfigError
from serving.config.file_set import RepositoryConfig
from serving.config.ray_schema import RayConf, RayDeploymentConf
from serving.config.schema import OpConfig, ServingConfig

INGRESS = "ingress"
METRICS_HUB = "metrics-hub"
IMPORT_PATH = "serving.rayserve.app:build_app"


def op_deployment_name(config: ServingConfig, op: OpConfig) -> str:
    """``<pipeline>-<op>`` (``<pipeline>-v<N>-<op>`` for a versioned file); ``shared-<share>`` for a shared op."""
    if op.share_name is not None:
        return f"shared-{op.share_name}"
    base = config.name if config.version is None else f"{config.name}-v{config.version}"
    return f"{base}-{op.name}"


def ray_conf(repo: RepositoryConfig) -> RayConf:
    return ray_block(repo)[1]


def ray_block(repo: RepositoryConfig) -> tuple[str, RayConf]:
    """The top-level ``ray:`` block and its file, application-wide like ``http_port``: the files
    that set one must agree (ConfigError naming the first that differs); none: the first's defaults."""
    chosen: tuple[str, RayConf] | None = None
    for file, config in zip(repo.files, repo.pipelines):
        if "ray" not in config.model_fields_set:
            continue
        if chosen is None:
            chosen = (file, config.ray)
        elif config.ray != chosen[1]:
            raise ConfigError(
                file, "ray", f"differs from the ray block of {chosen[0]}: the files of one application share one"
            )
    return chosen or (repo.files[0], repo.pipelines[0].ray)


def app_name(repo: RepositoryConfig) -> str:
    conf = ray_conf(repo)
    if conf.app_name:
        return conf.app_name
    names = sorted(repo.routes)
    return names[0] if len(names) == 1 else "batchline"


def _options(conf: RayDeploymentConf, *, cpus: float, gpus: float, ongoing: int, queued: int) -> dict[str, Any]:
    """A deployment's Ray Serve options: what its block sets, the given defaults where it sets none."""
    actor = conf.ray_actor_options
    actor_options: dict[str, Any] = {"num_cpus": cpus if actor.num_cpus is None else actor.num_cpus}
    num_gpus = gpus if actor.num_gpus is None else actor.num_gpus
    if num_gpus:
        actor_options["num_gpus"] = num_gpus
    if actor.memory is not None:
        actor_options["memory"] = actor.memory
    if actor.resources:
        actor_options["resources"] = dict(actor.resources)
    if conf.autoscaling_config is not None:
        scaling: dict[str, Any] = {"autoscaling_config": conf.autoscaling_config.model_dump(exclude_none=True)}
    else:
        scaling = {"num_replicas": conf.num_replicas or 1}
    return {
        **scaling,
        "max_ongoing_requests": conf.max_ongoing_requests or ongoing,
        "ray_actor_options": actor_options,
        "max_queued_requests": queued if conf.max_queued_requests is None else conf.max_queued_requests,
        "graceful_shutdown_timeout_s": conf.graceful_shutdown_timeout_s,
        "health_check_period_s": conf.health_check_period_s,
    }


def op_options(op: OpConfig, *, admitted: int) -> dict[str, Any]:
    """Ray Serve options of an op's deployment, defaults filled in from the op (docs/CONFIG.md).

    In-flight calls: two full batches per instance, so one batch can form while another
    runs. Queued calls: ``admitted`` (Ray counts per caller, and an admitted request has
    at most one call out per op: finite, yet never refusing what the ingress admitted).
    """
    svc = op.local_service_conf
    on_gpu = svc.device_type != 0
    return _options(
        op.ray or RayDeploymentConf(),
        cpus=1.0 if on_gpu else float(svc.instance_num * svc.thread_num),
        gpus=float(max(1, len(svc.device_ids))) if on_gpu else 0.0,
        ongoing=2 * svc.max_batch_size * svc.instance_num,
        queued=admitted,
    )


def admitted_callers(repo: RepositoryConfig, config: ServingConfig, op: OpConfig) -> int:
    """How many requests one ingress replica may hold that each call this op's deployment:
    the summed ``dag.max_queue_size`` of its pipelines (every user of a shared op)."""
    if op.share_name is None:
        return config.dag.max_queue_size
    return sum(user.dag.max_queue_size for user, _ in repo.shares[op.share_name].users)


def ingress_options(repo: RepositoryConfig) -> dict[str, Any]:
    """The ingress's options: our own admission answers 503 beyond ``max_queue_size``, so Ray
    lets every admissible request in; more wait in each proxy only while every replica is
    that full (the ingress's bound, as ``http.connection_limit`` is one process's)."""
    return _options(
        ray_conf(repo).ingress,
        cpus=1.0,
        gpus=0.0,
        ongoing=repo.max_queue_size + repo.worker_num,
        queued=repo.max_queue_size,
    )


def hub_options() -> dict[str, Any]:
    # bounded, so that callers of a stuck hub give up rather than queue without end
    return {
        "num_replicas": 1,
        "max_ongoing_requests": 1000,
        "ray_actor_options": {"num_cpus": 0.0},
        "max_queued_requests": 100,
    }


def deployment_options(
    repo: RepositoryConfig, num_cpus: Mapping[str, float] | None = None
) -> dict[str, dict[str, Any]]:
    """Every deployment's options, ``num_cpus`` (fitted CPUs per replica) in place of the configs'."""
    out = {
        name: op_options(op, admitted=admitted_callers(repo, config, op))
        for name, (config, op) in op_deployments(repo).items()
    }
    out[INGRESS] = ingress_options(repo)
    out[METRICS_HUB] = hub_options()
    for name, cpus in (num_cpus or {}).items():
        out[name]["ray_actor_options"]["num_cpus"] = cpus
    return out


def op_deployments(repo: RepositoryConfig) -> dict[str, tuple[ServingConfig, OpConfig]]:
    """Op deployment name -> the (pipeline, op) whose config it runs (a shared op's first user).

    ConfigError when two ops that are not one share would get one name (names joined by
    '-' may hold '-'), one takes the ingress's or hub's, or a share's ``ray`` blocks differ."""
    out: dict[str, tuple[ServingConfig, OpConfig]] = {}
    errors: list[ConfigError] = []
    for file, config in zip(repo.files, repo.pipelines):
        for op in config.ops:
            name = op_deployment_name(config, op)
            first = out.get(name)
            if name in (INGRESS, METRICS_HUB):
                problem = f"its Ray Serve deployment name {name!r} is the {name} deployment's: rename the op"
            elif first is not None and (op.share_name is None or op.share_name != first[1].share_name):
                problem = (
                    f"its Ray Serve deployment name {name!r} is also that of op {first[1].name!r} "
                    f"of pipeline {first[0].name!r}: rename one of them"
                )
            elif first is not None and (op.ray or RayDeploymentConf()) != (first[1].ray or RayDeploymentConf()):
                errors.append(
                    ConfigError(
                        file,
                        f"op.{op.name}.ray",
                        f"differs from that of op {first[1].name!r} of pipeline {first[0].name!r}, which shares "
                        f"deployment {name!r}: give the ops of one share one ray block",
                    )
                )
                continue
            else:
                out.setdefault(name, (config, op))
                continue
            errors.append(ConfigError(file, f"op.{op.name}", problem))
    if errors:
        raise ConfigError.combine(errors)
    return out
