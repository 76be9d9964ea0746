"""``/docs``: Swagger UI 5 (it reads OpenAPI 3.1), served by the service itself, no CDN; ``/``
redirects there.

The static files come from the pip package ``swagger-ui-py`` (its ``swagger_ui/static``, a
released ``swagger-ui-dist``); only the files are used, not its framework glue, so the package
is located without being imported. The page (a full HTML document that, without JavaScript,
says so and links the OpenAPI document) loads the bundle and the stylesheet from
``/docs/assets``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import structlog
from quart import Quart, Response, redirect, render_template_string, send_from_directory, url_for
from quart_schema import hide
from werkzeug.wrappers.response import Response as WerkzeugResponse

from api.errors import RouteNotFound

log = structlog.get_logger(__name__)

ASSETS_PATH = "/docs/assets"


def _static_dir() -> Path | None:
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        return None  # the API works on; /docs has no assets (logged at start-up)
    return Path(next(iter(spec.submodule_search_locations))) / "static"


STATIC_DIR = _static_dir()


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{{ title }}</title>
  <link rel="stylesheet" href="{{ assets }}/swagger-ui.css">
</head>
<body>
  <noscript>
    <p>This page shows the API with Swagger UI, which needs JavaScript.
    The OpenAPI 3.1 document it reads is at <a href="{{ openapi }}">{{ openapi }}</a>.</p>
  </noscript>
  <div id="swagger-ui"></div>
  <script src="{{ assets }}/swagger-ui-bundle.js"></script>
  <script>
    SwaggerUIBundle({
      url: "{{ openapi }}",
      dom_id: "#swagger-ui",
      deepLinking: true,
      layout: "BaseLayout",
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
    });
  </script>
</body>
</html>
"""


def configure_docs_ui(app: Quart, title: str) -> None:
    """``/docs`` and its assets (``QuartSchema`` is told not to serve its own page)."""
    if STATIC_DIR is None:
        log.warning("docs_ui_missing", hint="pip install swagger-ui-py: /docs cannot render")

    @app.get("/docs")
    @hide
    async def docs_page() -> str:
        return await render_template_string(
            PAGE, title=title, assets=ASSETS_PATH, openapi=url_for("openapi")
        )

    @app.get("/")
    @hide
    async def index() -> WerkzeugResponse:
        """The service's root is its documentation (whose overview says where each org's help
        center is); ``Link`` names both documents (RFC 8631) for programs."""
        response = redirect(url_for("docs_page"), 302)
        response.headers["Link"] = (
            f'<{url_for("docs_page")}>; rel="service-doc", '
            f'<{url_for("openapi")}>; rel="service-desc"'
        )
        return response

    @app.get(f"{ASSETS_PATH}/<path:name>")
    @hide
    async def docs_assets(name: str) -> Response:
        if STATIC_DIR is None:
            raise RouteNotFound()
        return await send_from_directory(STATIC_DIR, name)
