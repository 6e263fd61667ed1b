"""The HTTP app, a WSGI app on werkzeug's routing, requests and responses (no framework):
a request is routed, checked (:mod:`serving.http.access`) and answered by its route
group's view (``serving.http.routes``), each a thin adapter over the request core. Every
failure gets its real status and a JSON body."""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from werkzeug.datastructures import EnvironHeaders
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge
from werkzeug.routing import Map, RequestRedirect, Rule
from werkzeug.test import Client, TestResponse
from werkzeug.wrappers import Request, Response

from serving.batching.decode_budget import DecodeBudget
from serving.batching.live_pipelines import PipelineRepository
from serving.batching.pipeline import Pipeline
from serving.errors import ServingError, as_serving_error
from serving.http.access import Access
from serving.http.origins import AccessPolicy
from serving.http.page import Page, add_page
from serving.http.pending import Pending
from serving.http.routes import errors, operations, prediction, v2
from serving.http.wsgi_call import BODY, environ_name
from serving.service.core import RequestCore, decoded_values
from serving.service.decode import DecodePlan
from serving.service.limits import RequestLimits, decode_budget_share, largest_body_size
from serving.service.served_pipelines import ServedRepository

log = logging.getLogger(__name__)

View = Callable[..., Response | Pending]
#: environ key: the route :meth:`HttpApp.light` matched
ROUTE = "batchline.route"
StartResponse = Callable[..., Any]


@dataclass(frozen=True)
class RouteContext:
    """What every route group is built from (a test may hand a group its own)."""

    core: RequestCore
    metrics_text: Callable[[], bytes]  # what ``/metrics`` answers

    @property
    def repository(self) -> ServedRepository:
        """The pipelines; their config changes on reload, so groups read it per request."""
        return self.core.repository


# in this order; errors first: its handlers answer every other group's failures
ROUTE_GROUPS: tuple[Callable[[HttpApp, RouteContext], None], ...] = (
    errors.register,
    prediction.register,
    v2.register,
    operations.register,
)


class Headers(EnvironHeaders):
    """werkzeug's view of the environ's headers, with a shorter ``get`` for a plain lookup
    (every request reads several: the access check, the route key, the length)."""

    def get(self, key: str, default: Any = None, type: Any = None) -> Any:  # type: ignore[override]
        if type is not None:
            return super().get(key, default, type)
        value = self.environ.get(environ_name(key))
        return default if value is None else value


class BoundedRequest(Request):
    """werkzeug's request, with multipart parts kept in memory, never in temporary files: the
    body is bounded and in memory already, so spooling parts would only store it twice."""

    def _get_file_stream(
        self,
        total_content_length: int | None,
        content_type: str | None,
        filename: str | None = None,
        content_length: int | None = None,
    ) -> io.BytesIO:
        return io.BytesIO()

    def __init__(self, environ: dict[str, Any]) -> None:
        super().__init__(environ)
        self.headers = Headers(environ)

    def get_data(self, cache: bool = True, as_text: bool = False, parse_form_data: bool = False) -> Any:
        """The body the HTTP server read whole (:data:`~serving.http.wsgi_call.BODY`), as is, once its
        length passed ``max_content_length``; werkzeug's stream read otherwise."""
        body = self.environ.get(BODY)
        if body is None or as_text or parse_form_data:
            return super().get_data(cache, as_text, parse_form_data)  # type: ignore[call-overload]
        if self.max_content_length is not None and len(body) > self.max_content_length:
            raise RequestEntityTooLarge()
        return body


class HttpApp:
    """Routes, the access check before any of them, and the error answers (a WSGI app)."""

    def __init__(self, core: RequestCore) -> None:
        self.core = core
        self.url_map = Map()
        paths = self.url_map.bind("")  # matches a path alone (no redirects: light POSTs only)
        # the pipelines' few paths, each matched once (a miss, e.g. a client's made-up paths, costs a match)
        self._post_routes = lru_cache(maxsize=256)(lambda path: paths.match(path, "POST"))
        self.views: dict[str, View] = {}
        self.automatic_options: set[str] = set()  # endpoints answering OPTIONS with their methods
        self.light_routes: dict[str, Callable[..., bool]] = {}  # prediction endpoints: may it run on a loop
        # the largest body any route takes (413 naming it; None: any), followed on reloads
        self.body_limit: int | None = None
        self.access: Access | None = None  # who may call what, checked before any route
        self.page: Page | None = None  # the page's files, which need no token
        # the error answers (serving.http.routes.errors sets them; until then werkzeug's own)
        self.http_error: Callable[[Request, HTTPException], Response] = lambda request, exc: exc.get_response()
        self.serving_error: Callable[[Request, ServingError], Response] = lambda request, err: Response(
            err.message, err.status
        )

    def check(self, request: Request) -> None:
        """Raise the refusal of ``request`` (:class:`Access`), or return: it may go on."""
        if self.access is not None:
            page_file = self.page is not None and self.page.file_for(request) is not None
            self.access.check(request, page_file=page_file)

    def add_url_rule(
        self,
        rule: str,
        endpoint: str,
        view: View,
        *,
        methods: Iterable[str],
        defaults: dict[str, Any] | None = None,
        automatic_options: bool = True,
    ) -> None:
        """Route ``rule`` to ``view(request, **arguments)``; HEAD follows GET, and OPTIONS
        answers the rule's methods unless ``automatic_options`` is off."""
        methods = set(methods)
        if automatic_options:
            methods.add("OPTIONS")
            self.automatic_options.add(endpoint)
        self.url_map.add(Rule(rule, endpoint=endpoint, methods=sorted(methods), defaults=defaults))
        self.views[endpoint] = view

    def add_prediction_rule(
        self,
        rule: str,
        endpoint: str,
        view: Callable[..., Pending | Response],
        *,
        light: Callable[..., bool],
        defaults: dict[str, Any] | None = None,
    ) -> None:
        """A POST route whose view parses a prediction and hands back its :class:`Pending`
        request (or the answer, for one the view answers itself), counted while it runs (drain
        waits for it); ``light(**arguments)``: whether it may be answered on an event loop
        (:meth:`respond_on_loop`)."""
        self.add_url_rule(rule, endpoint, view, methods=["POST"], defaults=defaults)
        self.light_routes[endpoint] = light

    def light(self, environ: dict[str, Any]) -> bool:
        """Whether the request of ``environ`` may be answered on an event loop: a POST to a light
        route (its route is kept in ``environ``, so it is matched once)."""
        if environ["REQUEST_METHOD"] != "POST" or environ.get("CONTENT_TYPE", "").lstrip().lower().startswith(
            "multipart/"
        ):
            return False  # a multipart body is parsed by werkzeug's form parser: not on the loop
        try:
            # the path as werkzeug reads it (UTF-8), so a route matches here as it does there
            endpoint, arguments = self._post_routes(environ["PATH_INFO"].encode("latin-1").decode(errors="replace"))
            light = self.light_routes.get(endpoint)
            if light is None or not light(**arguments):
                return False
        except Exception:  # noqa: BLE001 - not routable here: the app answers why, in a thread
            return False
        environ[ROUTE] = (endpoint, dict(arguments))  # a copy: the remembered match is shared
        return True

    def request(self, environ: dict[str, Any]) -> Request:
        request = BoundedRequest(environ)
        request.max_content_length = self.body_limit
        return request

    def respond(self, request: Request) -> Response:
        """The answer to ``request``: the access check first, then its route (a worker thread)."""
        try:
            with self._dispatch(request) as answer:
                return answer.complete() if isinstance(answer, Pending) else answer
        except Exception as exc:  # noqa: BLE001 - every failure gets its JSON answer
            return self._failure(request, exc)

    async def respond_on_loop(self, request: Request, executor: Executor) -> Response:
        """:meth:`respond` on an event loop: a light prediction is submitted and awaited
        there, no thread involved; what a view hands back that is not light runs on in
        ``executor``. Only where submitting never waits (a front process's link)."""
        try:
            with self._dispatch(request) as answer:
                if not isinstance(answer, Pending):
                    return answer
                if answer.light:
                    return await answer.settle()
                return await asyncio.get_running_loop().run_in_executor(executor, answer.complete)
        except Exception as exc:  # noqa: BLE001 - every failure gets its JSON answer
            return self._failure(request, exc)

    @contextmanager
    def _dispatch(self, request: Request) -> Iterator[Response | Pending]:
        """What ``request``'s view answers (a prediction's counted until the block ends), or the
        answer it already has (the access check's refusal raises)."""
        found = self._match(request)
        if isinstance(found, Response):
            yield found
            return
        endpoint, arguments = found
        with self.core.handlers if endpoint in self.light_routes else nullcontext():
            yield self.views[endpoint](request, **arguments)

    def _match(self, request: Request) -> Response | tuple[str, dict[str, Any]]:
        """The route of ``request`` once the access check let it in, or the answer it already has."""
        routed = request.environ.get(ROUTE)
        if routed is not None:  # a POST matched by :meth:`light`
            self.check(request)
            return routed
        adapter = self.url_map.bind_to_environ(request.environ)
        self.check(request)
        try:
            endpoint, arguments = adapter.match()
        except RequestRedirect as redirect:  # a path with doubled slashes: where it is
            return redirect.get_response(request.environ)
        if request.method == "OPTIONS" and endpoint in self.automatic_options:
            answer = Response(mimetype="text/html")
            answer.allow.update(adapter.allowed_methods())
            return answer
        return str(endpoint), dict(arguments)

    def _failure(self, request: Request, exc: Exception) -> Response:
        if isinstance(exc, ServingError):
            return self.serving_error(request, exc)
        if isinstance(exc, HTTPException):
            return self.http_error(request, exc)
        log.exception("unhandled error on %s", request.path)
        return self.serving_error(request, as_serving_error(exc))

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        return self.respond(self.request(environ))(environ, start_response)

    def test_client(self) -> Client:
        return Client(self, TestResponse)


def create_app(
    target: Pipeline | ServedRepository,
    *,
    auth_token: str | None = None,
    admin_token: str | None = None,
    limits: RequestLimits | None = None,
    metrics_text: Callable[[], bytes] | None = None,
    decode_budget: DecodeBudget | None = None,
    budget_share: float = 1.0,
    values: Callable[[DecodePlan], list[Any]] = decoded_values,
) -> HttpApp:
    """The app around a :class:`PipelineRepository` or one :class:`Pipeline` (started or
    starting). ``limits`` and ``decode_budget`` replace the config's (tests); ``metrics_text``
    renders ``/metrics`` (Ray adds its replicas'); ``budget_share``: a front process's part
    of the decode budget; ``values``: how the core submits checked inputs (Ray: undecoded).
    ``app.core`` is the one request core the process's other doors (gRPC) share."""
    repo: ServedRepository = PipelineRepository.of(target) if isinstance(target, Pipeline) else target
    core = RequestCore(repo, decode_budget or DecodeBudget(0), limits=limits, values=values)
    ctx = RouteContext(core=core, metrics_text=metrics_text or repo.metrics.render)
    app = HttpApp(core)
    _follow_reloads(app, ctx, budget_share if decode_budget is None else None)
    app.page = add_page(app)
    app.access = Access(auth_token, admin_token, AccessPolicy.of(repo.config.security))
    for register in ROUTE_GROUPS:
        register(app, ctx)
    return app


def _follow_reloads(app: HttpApp, ctx: RouteContext, budget_share: float | None) -> None:
    """Now and after each reload: the app-wide body limit, and (``budget_share`` of) the
    decode budget (a reload may change its key or the pipelines' ``max_image_pixels``)."""
    repo, limits = ctx.repository, ctx.core.limits

    def refresh_body_limit() -> None:
        app.body_limit = limits.max_body_size if limits else largest_body_size(repo.config)

    repo.on_reload(refresh_body_limit)
    if budget_share is not None:
        share = budget_share

        def resize_budget() -> None:
            ctx.core.decode_budget.resize(decode_budget_share(repo, share))

        repo.on_reload(resize_budget)
