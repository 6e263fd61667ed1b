"""The page at ``/``: try a pipeline in a browser and watch ``/metrics`` live. Plain files
shipped in the wheel, each served at ``/<file name>``, one path segment, which no pipeline
route has. Only a GET or HEAD is a page request, and ``/`` only for a client preferring
HTML: any other request gets what it got before the page existed (the 404 naming the
pipelines, or 401 first). Page files need no token: they hold no data."""

from __future__ import annotations

import html
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING

from werkzeug.exceptions import NotFound
from werkzeug.wrappers import Request, Response

if TYPE_CHECKING:
    from serving.http.app import HttpApp

FILES_DIR = "page_files"
INDEX = "index.html"
ROOT_MARK = "{{root}}"  # index.html's prefix for its files: the app's mount point (Ray's route_prefix)

_TYPES = MappingProxyType(
    {
        ".html": "text/html; charset=utf-8",
        ".css": "text/css; charset=utf-8",
        ".js": "text/javascript; charset=utf-8",
        ".svg": "image/svg+xml",
    }
)

# No inline script or style, nothing from another origin; Trusted Types make
# any assignment of a string to innerHTML (and the like) throw, so model text
# can only ever reach the page as text.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' blob:",  # blob: the image the user picked, shown before and after the answer
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    )
)

SECURITY_HEADERS = MappingProxyType(
    {
        "Content-Security-Policy": CONTENT_SECURITY_POLICY,
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=(), interest-cohort=()",
        "Cache-Control": "no-cache",  # revalidated (ETag), so an upgraded server serves its own page
    }
)


def load_files() -> dict[str, bytes]:
    """Every shipped page file by name (read once, at app creation)."""
    folder = resources.files("serving.http").joinpath(FILES_DIR)
    return {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file() and _type_of(f.name)}


def _type_of(name: str) -> str | None:
    dot = name.rfind(".")
    return _TYPES.get(name[dot:]) if dot > 0 else None


def _wants_html(req: Request) -> bool:
    """A browser navigating here, not an API client (``Accept: */*`` or JSON prefers the old answer)."""
    return req.accept_mimetypes.best_match(["application/json", "text/html"]) == "text/html"


class Page:
    """The page's files and routes on one app."""

    def __init__(self, files: dict[str, bytes]):
        self.files = MappingProxyType(dict(files))
        self.paths = frozenset(f"/{name}" for name in self.files if name != INDEX)

    def file_for(self, req: Request) -> str | None:
        """The page file ``req`` asks for, or None when it is no page request."""
        if req.method not in ("GET", "HEAD"):
            return None
        if req.path == "/":
            return INDEX if _wants_html(req) else None
        return req.path[1:] if req.path in self.paths else None

    def register(self, app: HttpApp) -> None:
        # every method: a request that is not for the page falls to the app's 404 as before
        methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
        for path in ("/", *sorted(self.paths)):
            app.add_url_rule(path, f"page:{path}", self._serve, methods=methods, automatic_options=False)

    def _serve(self, request: Request) -> Response:
        name = self.file_for(request)
        if name is None:
            raise NotFound()
        body = self.files[name]
        if name == INDEX:
            body = body.replace(ROOT_MARK.encode(), html.escape(request.script_root).encode())
        resp = Response(body, content_type=_type_of(name))
        resp.headers.update(SECURITY_HEADERS)
        resp.add_etag()
        return resp.make_conditional(request)


def add_page(app: HttpApp) -> Page:
    """Serve the page on ``app``; the returned :class:`Page` tells page requests apart (auth)."""
    page = Page(load_files())
    page.register(app)
    return page
