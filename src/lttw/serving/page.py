"""What a browser loads from ``lttw serve``, every file from an installed package and none
from a CDN:

- ``GET /``: a page to try the model (``static/index.html``, ``page.js``, ``page.css``,
  package data of ``lttw.serving``): a text box; the classes' probabilities as bars
  (``POST /predict`` in the ``inputs`` shape); the words the explanation highlights
  (``POST /explain``). ``/?text=...`` fills the box and predicts at once. Where the server
  needs an API key the page asks for it and keeps it in the page only (no cookie, no
  storage). The page and its two files need no token (they hold no data; the Host allow
  list applies) and are sent with a Content-Security-Policy allowing this origin only.
- ``GET /docs``: Swagger UI on ``/openapi.json``, its script, style and icon from the
  ``fastapi-offline`` package (FastAPI's own page loads them from a CDN).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response

#: the page's routes: (package, file, media type)
PAGE_FILES = {
    "/": ("lttw.serving", "static/index.html", "text/html; charset=utf-8"),
    "/static/page.js": ("lttw.serving", "static/page.js", "text/javascript; charset=utf-8"),
    "/static/page.css": ("lttw.serving", "static/page.css", "text/css; charset=utf-8"),
}
#: Swagger UI's files behind ``GET /docs``
DOCS_FILES = {
    "/docs/swagger-ui-bundle.js": (
        "fastapi_offline",
        "static/swagger-ui-bundle.js",
        "text/javascript; charset=utf-8",
    ),
    "/docs/swagger-ui.css": ("fastapi_offline", "static/swagger-ui.css", "text/css; charset=utf-8"),
    "/docs/favicon.png": ("fastapi_offline", "static/favicon.png", "image/png"),
}
#: the page's headers: scripts, styles, images and requests of this origin only, never framed
PAGE_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}


@cache
def _read(package: str, name: str) -> bytes:
    return files(package).joinpath(name).read_bytes()


def add_page_routes(app: FastAPI) -> None:
    """``GET /`` with its files, and ``GET /docs`` with Swagger UI's, on ``app``."""
    from fastapi.openapi.docs import get_swagger_ui_html

    def route(path: str, package: str, name: str, media_type: str, headers: dict) -> None:
        async def serve_file() -> Response:
            return Response(_read(package, name), media_type=media_type, headers=headers)

        app.add_api_route(path, serve_file, methods=["GET"], include_in_schema=False)

    for path, (package, name, media_type) in PAGE_FILES.items():
        route(path, package, name, media_type, PAGE_HEADERS)
    for path, (package, name, media_type) in DOCS_FILES.items():
        route(path, package, name, media_type, {"x-content-type-options": "nosniff"})

    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="lttw - Swagger UI",
            swagger_js_url="/docs/swagger-ui-bundle.js",
            swagger_css_url="/docs/swagger-ui.css",
            swagger_favicon_url="/docs/favicon.png",
        )

    app.add_api_route("/docs", docs, methods=["GET"], include_in_schema=False)
