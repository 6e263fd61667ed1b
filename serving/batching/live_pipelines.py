"""Several pipelines in one server: how a request finds its pipeline (versions,
A/B weights, shadow copies), and reload without a restart. A *generation* is one
immutable routing table, read once per request; a reload builds and warms what is
new or changed while the old one serves, swaps it in one assignment and drains
the old pipelines; a reload that fails changes nothing.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from serving.batching.metrics import Metrics, Placement
from serving.batching.pipeline import Pipeline
from serving.batching.request import RequestState
from serving.batching.routing import Router
from serving.batching.shadow import Shadow
from serving.batching.shared import SharedStages, User
from serving.batching.stage import OpStage
from serving.batching.stage_api import Stage
from serving.config.errors import ConfigError
from serving.config.file_set import (
    RELOADABLE_SERVER_KEYS,
    SERVER_KEYS,
    RepositoryConfig,
    load_repository,
    op_fingerprint,
    pipeline_fingerprint,
    repository_of,
)
from serving.config.schema import OpConfig, ServingConfig
from serving.errors import Conflict, InternalError, InvalidConfig, NotFound, ServingError, ShuttingDown
from serving.runners.cpu_plan import CpuAllocator
from serving.runners.device_hosts import DeviceHosts

log = logging.getLogger(__name__)

Key = tuple[str, int]  # (pipeline name, version)
# builds the stage of one op of one pipeline elsewhere (the Ray backend: a deployment's proxy)
StageSource = Callable[[ServingConfig, OpConfig], Stage]


P = TypeVar("P")


def find_pipeline(config: RepositoryConfig, pipelines: Mapping[Key, P], name: str, version: int | None) -> P:
    """``pipelines[(name, version)]``; no version: the route's default. Else 404 naming what is served."""
    route = config.routes.get(name)
    if route is None:
        raise NotFound(f"unknown pipeline {name[:64]!r}; this server runs {', '.join(sorted(config.routes))}")
    chosen = route.default if version is None else version
    pipeline = pipelines.get((name, chosen))
    if pipeline is None:
        have = ", ".join(f"v{v}" for v in sorted(route.versions))
        raise NotFound(f"pipeline {name[:64]!r} has no version {chosen} (versions: {have})")
    return pipeline


@dataclass
class Generation:
    number: int
    config: RepositoryConfig
    pipelines: dict[Key, Pipeline]
    routers: dict[str, Router] = field(default_factory=dict)
    shadows: dict[str, Shadow] = field(default_factory=dict)

    def pipeline(self, name: str, version: int | None = None) -> Pipeline:
        """A pipeline by name and version; no version: the route's default."""
        return find_pipeline(self.config, self.pipelines, name, version)

    @property
    def ready(self) -> bool:
        return bool(self.pipelines) and all(p.ready for p in self.pipelines.values())

    @property
    def broken(self) -> bool:
        return any(p.broken for p in self.pipelines.values())


@dataclass
class _Held:
    """What the repository keeps for one running pipeline."""

    fingerprint: str  # of its config: a reload keeps the pipeline while it is unchanged
    user: User | None  # its name in the shared stages it feeds (None: built by the caller, feeds none)
    shares: list[tuple[str, str]]  # (share name, fingerprint) of each shared stage it holds


@dataclass
class ReloadReport:
    generation: int
    added: list[str]
    changed: list[str]
    removed: list[str]
    unchanged: list[str]

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _logid_key(logid: Any) -> str | None:
    """A logid as a sticky routing key. 0 is Paddle Serving clients' default
    logid, sent by clients that set none: as a key it would send all their
    traffic to one version (and shadow all or none of it), so it is no key."""
    if logid is None or str(logid) in ("", "0"):
        return None
    return str(logid)


def _shadow_keys(config: RepositoryConfig) -> set[Key]:
    """The pipelines that are some route's shadow version."""
    return {(name, route.shadow.version) for name, route in config.routes.items() if route.shadow is not None}


def _label(key: Key) -> str:
    return f"{key[0]}/v{key[1]}"


class PipelineRepository:
    """The pipelines of one server. ``loader`` re-reads the sources on reload;
    ``stage_source``, when given, provides every op's stage (none runs in this
    process); ``reload_refused`` says why this server cannot reload, if it cannot."""

    def __init__(
        self,
        config: RepositoryConfig,
        *,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        loader: Callable[[Sequence[str]], RepositoryConfig] = load_repository,
        warmup: bool = True,
        built: Pipeline | None = None,
        stage_source: StageSource | None = None,
        reload_refused: str | None = None,
    ):
        self.metrics = metrics or Metrics()
        self.stage_source = stage_source
        self.reload_refused = reload_refused
        self.clock = clock
        self.loader = loader
        self.warmup = warmup
        self.cpus = CpuAllocator()
        self.hosts = DeviceHosts()  # one process per device for instance_mode: device_process, across reloads
        self.shared = SharedStages(metrics=self.metrics, cpus=self.cpus, hosts=self.hosts, clock=clock)
        self._ids = itertools.count(1)
        # per running pipeline: its config's fingerprint and the shared stages it holds
        self._held: dict[Pipeline, _Held] = {}
        self._builds = itertools.count(1)
        # generation 1 exists (its pipelines answer 503 "starting") before start() loads anything
        if built is None:
            pipelines = self._build_all(config, {})
        else:  # ``of``: around a pipeline built by the caller
            pipelines = {(built.name, built.version): built}
            self._held[built] = _Held(pipeline_fingerprint(built.config), None, [])
        self._gen = self._build_generation(1, config, pipelines)
        self._reload_lock = threading.Lock()
        self._draining: list[threading.Thread] = []
        self._closed = False
        self._reload_listeners: list[Callable[[], None]] = []
        self.metrics.instance_devices.read_from(self._placements)

    @classmethod
    def of(cls, pipeline: Pipeline) -> PipelineRepository:
        """A repository around one already built pipeline (started or not)."""
        return cls(repository_of(pipeline.config), metrics=pipeline.metrics, clock=pipeline.clock, built=pipeline)

    # ---- state ---------------------------------------------------------------------
    @property
    def config(self) -> RepositoryConfig:
        return self._gen.config

    @property
    def generation(self) -> Generation:
        return self._gen

    @property
    def ready(self) -> bool:
        return not self._closed and self._gen.ready

    @property
    def live(self) -> bool:
        """The server can still recover by itself: no op has lost every instance for good."""
        return not self._gen.broken

    def pipeline(self, name: str, version: int | None = None) -> Pipeline:
        return self._gen.pipeline(name, version)

    def _placements(self) -> Iterator[Placement]:
        """Where the instances of the served generation's stages run (a shared stage once; remote ones
        are placed by their own process)."""
        seen: set[int] = set()
        for pipeline in list(self._gen.pipelines.values()):
            for stage in list(pipeline.stages.values()):
                if isinstance(stage, OpStage) and id(stage) not in seen:
                    seen.add(id(stage))
                    yield stage.labels, stage.devices

    # ---- life cycle -----------------------------------------------------------------
    def start(self) -> None:
        """Load, warm and start every pipeline of generation 1."""
        with self._reload_lock:
            self._start_all(self._gen.pipelines)
            self.metrics.generation.set(self._gen.number)

    def shutdown(self, timeout: float | None = None) -> bool:
        """Stop routing, drain every pipeline (in parallel), stop shared stages."""
        with self._reload_lock:
            pipelines = list(self._gen.pipelines.items())
            # here, not in the drain threads (late on a loaded machine): once draining, none may admit
            for _, pipeline in pipelines:
                pipeline.stop_admitting()
            self._closed = True
        results: dict[Key, bool] = {}

        def drain(key: Key, pipeline: Pipeline) -> None:
            results[key] = pipeline.shutdown(timeout)
            self._release_shares(pipeline)

        threads = [threading.Thread(target=drain, args=item, name=f"drain-{_label(item[0])}") for item in pipelines]
        for t in threads:
            t.start()
        for t in [*threads, *self._draining]:
            t.join()
        return all(results.values())

    # ---- requests -------------------------------------------------------------------
    def submit(
        self,
        name: str,
        values: Sequence[Any],
        *,
        version: int | None = None,
        key: str | None = None,
        priority: int = 0,
        timeout_ms: int | None = None,
        logid: Any = None,
        protocol: str = "http",
    ) -> list[RequestState]:
        """Admit the values of one HTTP request to one version of ``name``:
        ``version`` if given, else the one the route picks for ``key`` (sticky)
        or ``logid``. A routed request may also be copied to the shadow version."""
        route_key = key or _logid_key(logid)
        for _ in range(3):
            gen = self._gen
            router = gen.routers.get(name)  # None: an unknown name, which gen.pipeline refuses
            chosen = version if version is not None or router is None else router.pick(route_key)
            pipeline = gen.pipeline(name, chosen)
            try:
                handles = self._submit_all(pipeline, values, priority, timeout_ms, logid, protocol)
            except ShuttingDown:
                if gen is self._gen:
                    raise
                continue  # routing switched while we chose: the new generation takes it
            shadow = gen.shadows.get(name) if version is None else None
            if shadow is not None and router is not None and router.shadow(route_key):
                shadow.offer(pipeline, handles, values, timeout_ms=timeout_ms, logid=logid)
            return handles
        raise ShuttingDown("the pipeline set changed repeatedly while routing this request; retry")

    def precheck(
        self,
        name: str,
        count: int,
        *,
        version: int | None = None,
        key: str | None = None,
        timeout_ms: int | None = None,
        logid: Any = None,
    ) -> None:
        """Raise now the 503 (or 404) :meth:`submit` would raise for ``count`` values, before
        the caller spends anything on them (decoding images). An unkeyed request to a split
        route is refused only if every version taking traffic would refuse it; a draining
        pipeline passes (``submit`` routes around a reload)."""
        gen = self._gen
        route_key = key or _logid_key(logid)
        if version is not None:
            versions: list[int | None] = [version]
        elif name in gen.routers:
            router = gen.routers[name]
            weighted = [v for v, w in router.weights.items() if w > 0]
            versions = [router.pick(route_key)] if route_key or len(weighted) == 1 else list(weighted)
        else:
            versions = [None]  # gen.pipeline raises NotFound
        refusal: ServingError | None = None
        for chosen in versions:
            try:
                gen.pipeline(name, chosen).precheck(count, timeout_ms=timeout_ms)
                return
            except ShuttingDown:
                return
            except ServingError as err:
                if err.status != 503:
                    raise
                refusal = refusal or err
        if refusal is not None:
            raise refusal

    @staticmethod
    def _submit_all(
        pipeline: Pipeline, values: Sequence[Any], priority: int, timeout_ms: int | None, logid: Any, protocol: str
    ) -> list[RequestState]:
        handles: list[RequestState] = []
        try:
            for value in values:
                handles.append(
                    pipeline.submit(value, priority=priority, timeout_ms=timeout_ms, logid=logid, protocol=protocol)
                )
        except ServingError as err:  # e.g. overloaded half-way: cancel what was admitted
            for handle in handles:
                handle.fail(err)
            raise
        return handles

    # ---- reload ---------------------------------------------------------------------
    def on_reload(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` now and after every successful reload (e.g. to refresh HTTP limits)."""
        self._reload_listeners.append(callback)
        callback()

    def reload(self) -> ReloadReport:
        """Re-read the sources; build and warm what is new or changed, switch, drain the old.
        Raises InvalidConfig (422) or InternalError (500) and changes nothing on failure."""
        if self.reload_refused is not None:
            raise Conflict(f"this server does not reload: {self.reload_refused}")
        if not self._reload_lock.acquire(blocking=False):
            raise Conflict("a reload is already running")
        try:
            return self._reload()
        finally:
            self._reload_lock.release()

    def _reload(self) -> ReloadReport:
        if self._closed:
            raise ShuttingDown()
        old = self._gen
        try:
            config = self.loader(old.config.sources)
        except ConfigError as exc:
            self.metrics.reloads.labels("invalid").inc()
            log.error("reload refused, nothing changed:\n%s", exc)
            raise InvalidConfig(f"reload refused, nothing changed: {exc}") from None
        moved = self._server_changes(old.config, config)
        if moved:
            self.metrics.reloads.labels("invalid").inc()
            log.error("reload refused, nothing changed: %s", moved)
            raise InvalidConfig(f"reload refused, nothing changed: {moved}")
        wanted = {(p.name, p.effective_version): pipeline_fingerprint(p) for p in config.pipelines}
        # kept: the same config and role (a new or former shadow moves into or out of the idle CPU class)
        shadows = _shadow_keys(config)
        keep = {
            key: p
            for key, p in old.pipelines.items()
            if p in self._held and self._held[p].fingerprint == wanted.get(key) and p.idle_cpu == (key in shadows)
        }
        built: dict[Key, Pipeline] = {}
        try:
            built = self._build_all(config, keep)
            self._start_all(built)
        except Exception as exc:  # noqa: BLE001 - reported to the caller; the old set keeps serving
            self._discard({k: p for k, p in built.items() if keep.get(k) is not p})
            self.metrics.reloads.labels("failed").inc()
            log.exception("reload failed, nothing changed")
            raise InternalError(f"reload failed, nothing changed: {type(exc).__name__}: {exc}") from None
        new = self._build_generation(old.number + 1, config, built)
        self._gen = new  # the switch: requests from now on route in the new generation
        self.metrics.generation.set(new.number)
        self.metrics.reloads.labels("ok").inc()
        retired = [(key, p) for key, p in old.pipelines.items() if new.pipelines.get(key) is not p]
        for key, pipeline in retired:
            thread = threading.Thread(
                target=self._retire, args=(key, pipeline), name=f"drain-{_label(key)}", daemon=True
            )
            self._draining.append(thread)
            thread.start()
        self._draining = [t for t in self._draining if t.is_alive()]
        report = ReloadReport(
            generation=new.number,
            added=sorted(_label(k) for k in new.pipelines if k not in old.pipelines),
            changed=sorted(_label(k) for k in new.pipelines if k in old.pipelines and k not in keep),
            removed=sorted(_label(k) for k in old.pipelines if k not in new.pipelines),
            unchanged=sorted(_label(k) for k in keep if k in new.pipelines),
        )
        for listener in self._reload_listeners:
            listener()
        log.info("reload: generation %d %s", new.number, report.as_dict())
        return report

    @staticmethod
    def _server_changes(old: RepositoryConfig, new: RepositoryConfig) -> str:
        """Server-wide keys a reload cannot apply to a running server ('' if none changed)."""
        changed = [k for k in SERVER_KEYS if k not in RELOADABLE_SERVER_KEYS and getattr(old, k) != getattr(new, k)]
        if not changed:
            return ""
        return f"{', '.join(changed)} changed: server-wide keys take effect on a restart, not on a reload"

    def _retire(self, key: Key, pipeline: Pipeline) -> None:
        pipeline.shutdown()
        self._release_shares(pipeline)
        successor = self._gen.pipelines.get(key)
        if successor is not None and successor.ready:  # the old one's shutdown cleared their shared gauge
            self.metrics.ready.labels(*successor.labels).set(1)

    # ---- building -----------------------------------------------------------------------
    def _build_all(self, config: RepositoryConfig, keep: dict[Key, Pipeline]) -> dict[Key, Pipeline]:
        """Every pipeline of ``config``: the kept ones as they are, the others built (not started)."""
        shadow_keys = _shadow_keys(config)
        out: dict[Key, Pipeline] = {}
        try:
            for pconf in config.pipelines:
                key = (pconf.name, pconf.effective_version)
                if key in keep:
                    out[key] = keep[key]
                else:
                    out[key] = self._build(pconf, idle_cpu=key in shadow_keys)
        except BaseException:
            self._discard({k: p for k, p in out.items() if k not in keep})
            raise
        return out

    def _start_all(self, pipelines: dict[Key, Pipeline]) -> None:
        """Start the shared stages not started yet, then every pipeline still starting."""
        self.shared.start_pending(warmup=self.warmup)
        for pipeline in pipelines.values():
            if pipeline.state == "starting":
                pipeline.start(warmup=self.warmup)

    def _discard(self, pipelines: dict[Key, Pipeline]) -> None:
        """Stop pipelines that never served (a failed reload) and the shared stages only they held."""
        for pipeline in pipelines.values():
            pipeline.shutdown(timeout=1.0)
            self._release_shares(pipeline)

    def _build(self, pconf: ServingConfig, *, idle_cpu: bool) -> Pipeline:
        user = (pconf.name, pconf.effective_version, next(self._builds))
        shared: dict[str, Stage] = {}
        held: list[tuple[str, str]] = []
        try:
            for op in pconf.ops:
                share = op.share_name
                if self.stage_source is not None:
                    shared[op.name] = self.stage_source(pconf, op)
                    continue
                if share is None:
                    continue
                fingerprint = op_fingerprint(pconf, op.name)
                shared[op.name] = self.shared.acquire(share, fingerprint, op, pconf.dag, user)
                held.append((share, fingerprint))
            pipeline = Pipeline(
                pconf,
                metrics=self.metrics,
                clock=self.clock,
                shared=shared,
                ids=self._ids,
                cpus=self.cpus,
                hosts=self.hosts,
                idle_cpu=idle_cpu,
            )
        except BaseException:
            for share, fingerprint in held:
                self.shared.release(share, fingerprint, user)
            raise
        self._held[pipeline] = _Held(pipeline_fingerprint(pconf), user, held)
        return pipeline

    def _release_shares(self, pipeline: Pipeline) -> None:
        """Forget a stopped pipeline; the last user of a shared stage stops it."""
        held = self._held.pop(pipeline, None)
        if held is None or held.user is None:
            return
        for share, fingerprint in held.shares:
            self.shared.release(share, fingerprint, held.user)

    def _build_generation(self, number: int, config: RepositoryConfig, pipelines: dict[Key, Pipeline]) -> Generation:
        gen = Generation(number, config, pipelines)
        for name, route in config.routes.items():
            sample = route.shadow.sample if route.shadow is not None else 0.0
            gen.routers[name] = Router(route.weights, shadow_sample=sample, salt=name)
            if route.shadow is not None and (name, route.shadow.version) in pipelines:
                gen.shadows[name] = Shadow(
                    name,
                    pipelines[(name, route.shadow.version)],
                    max_in_flight=route.shadow.max_in_flight,
                    metrics=self.metrics,
                )
        return gen

    # ---- introspection -------------------------------------------------------------------
    def listing(self) -> dict[str, Any]:
        """What ``GET /pipelines`` shows."""
        gen = self._gen
        pipelines = []
        for (name, version), p in sorted(gen.pipelines.items()):
            route = gen.config.routes[name]
            shares = {op.name: op.share_name for op in p.config.ops if op.share_name}
            pipelines.append(
                {
                    "name": name,
                    "version": version,
                    "state": p.state,
                    "default": route.default == version,
                    "weight": route.weights.get(version, 0),
                    "shadow": route.shadow is not None and route.shadow.version == version,
                    "source": p.config.source_path,
                    "in_flight": p.in_flight,
                    "ops": [dict(row, shared=shares.get(row["op"])) for row in p.op_table()],
                }
            )
        routes = {
            name: {
                "default": route.default,
                "weights": {str(v): w for v, w in sorted(route.weights.items())},
                "key_header": route.key_header,
                "shadow": None if route.shadow is None else route.shadow.model_dump(),
            }
            for name, route in sorted(gen.config.routes.items())
        }
        return {
            "generation": gen.number,
            "ready": self.ready,
            "pipelines": pipelines,
            "routes": routes,
            "shared_ops": self.shared.users(),
        }
