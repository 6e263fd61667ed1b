"""The Flask app: Paddle Serving compatible and native prediction endpoints,
health, metrics and config, and the page at ``/`` (``page.py``). Every
failure gets its real HTTP status.

``create_app`` only assembles: the route groups (``serving.http.routes``),
each built from one :class:`RouteContext`, the page and the access check."""

from __future__ import annotations

import io
from collections.abc import Callable

from flask import Flask, Request, request

from serving.engine.decode_budget import DecodeBudget
from serving.engine.pipeline import Pipeline
from serving.engine.pipeline_repository import PipelineRepository
from serving.http.access import Access
from serving.http.flask_json import FlaskJSON
from serving.http.origins import AccessPolicy
from serving.http.page import Page, add_page
from serving.http.routes import admin, errors, health, listing, metrics, prediction, v2
from serving.http.routes.context import RouteContext
from serving.service.core import RequestCore
from serving.service.limits import RequestLimits, decode_budget_bytes, max_body_size, one_request_decode_bytes, share_of
from serving.service.served_repository import ServedRepository

#: where the app keeps its request core (``app.extensions``: tests and the fronts' drain read it)
CORE = "batchline.core"

# in this order; errors first: its handlers answer every other group's failures
ROUTE_GROUPS: tuple[Callable[[Flask, RouteContext], None], ...] = (
    errors.register,
    prediction.register,
    v2.register,
    listing.register,
    admin.register,
    health.register,
    metrics.register,
)


class BoundedRequest(Request):
    """Flask's request, with multipart parts kept in memory, never in temporary files:
    the body is bounded already (``max_body_size``, ``http.max_buffered_mb``), the app
    reads every part whole anyway, and ``/tmp`` holds the body the HTTP front stored, so
    werkzeug's own spooling of parts over 500 KB would only store it there a second time."""

    def _get_file_stream(
        self,
        total_content_length: int | None,
        content_type: str | None,
        filename: str | None = None,
        content_length: int | None = None,
    ) -> io.BytesIO:
        return io.BytesIO()


def create_app(
    target: Pipeline | ServedRepository,
    *,
    auth_token: str | None = None,
    admin_token: str | None = None,
    limits: RequestLimits | None = None,
    metrics_text: Callable[[], bytes] | None = None,
    decode_budget: DecodeBudget | None = None,
    budget_share: float = 1.0,
    core: RequestCore | None = None,
) -> Flask:
    """Build the app around a :class:`PipelineRepository` (several pipelines)
    or one :class:`Pipeline`; started or starting. ``auth_token`` guards the
    routes, ``admin_token`` the admin ones (``serving.http.access``; the
    allow-lists come from the config's ``security``). ``limits`` overrides every
    pipeline's own HTTP limits (tests). ``metrics_text`` renders ``/metrics``
    (default: the repository's own registry; the Ray backend adds its replicas').
    ``decode_budget`` replaces the one the config sets (tests). ``budget_share``: this
    process's part of the server's decode budget (a front process's, ``http.front_workers``).
    ``core``: the request core the other doors share (built here when None; then ``limits``
    and ``decode_budget`` are its, and ``target`` its repository)."""
    if core is None:
        repo: ServedRepository = PipelineRepository.of(target) if isinstance(target, Pipeline) else target
        core = RequestCore(repo, decode_budget or DecodeBudget(0), limits=limits)
    else:
        repo = core.repository
    ctx = RouteContext(core=core, metrics_text=metrics_text or repo.metrics.render)
    app = Flask("batchline")
    app.request_class = BoundedRequest
    app.json = FlaskJSON(app)  # orjson; answers keep UTF-8 text readable
    app.extensions[CORE] = core
    _follow_reloads(app, ctx, budget_share if decode_budget is None else None)
    page = add_page(app)
    _check_access(app, Access(auth_token, admin_token, AccessPolicy.of(repo.config.security)), page)
    for register in ROUTE_GROUPS:
        register(app, ctx)
    return app


def _follow_reloads(app: Flask, ctx: RouteContext, budget_share: float | None) -> None:
    """Now and after each reload: the app-wide body limit, and (``budget_share`` of) the
    decode budget (a reload may change its key or the pipelines' ``max_image_pixels``)."""
    repo, limits = ctx.repository, ctx.core.limits

    def refresh_body_limit() -> None:
        app.config["MAX_CONTENT_LENGTH"] = limits.max_body_size if limits else max_body_size(repo)

    repo.on_reload(refresh_body_limit)
    if budget_share is not None:
        share = budget_share

        def resize_budget() -> None:
            ctx.core.decode_budget.resize(share_of(decode_budget_bytes(repo), share, one_request_decode_bytes(repo)))

        repo.on_reload(resize_budget)


def _check_access(app: Flask, access: Access, page: Page) -> None:
    app.extensions["batchline.access"] = access  # the loop route (serving.http.loop_route) checks with it too

    def check() -> None:
        access.check(request, page_file=page.file_for(request) is not None)  # refusals: the errors group

    app.before_request(check)
