"""``/docs``: Swagger UI 5 (it reads OpenAPI 3.1), served by the service itself, no CDN.

The static files come from the pip package ``swagger-ui-py`` (its ``swagger_ui/static``, a
released ``swagger-ui-dist``); only the files are used, not its framework glue, so the package
is located without being imported. quart-schema renders the ``/docs`` page and loads the
bundle and the stylesheet from ``/docs/assets``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import structlog
from quart import Quart, Response, send_from_directory
from quart_schema import hide

from api.errors import RouteNotFound

log = structlog.get_logger(__name__)

ASSETS_PATH = "/docs/assets"


def _static_dir() -> Path | None:
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        return None  # the API works on; /docs has no assets (logged at start-up)
    return Path(next(iter(spec.submodule_search_locations))) / "static"


STATIC_DIR = _static_dir()


def configure_docs_ui(app: Quart) -> None:
    """Point quart-schema's page at the local assets (call before ``QuartSchema(app)``)."""
    app.config.update(
        QUART_SCHEMA_SWAGGER_JS_URL=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        QUART_SCHEMA_SWAGGER_CSS_URL=f"{ASSETS_PATH}/swagger-ui.css",
    )

    if STATIC_DIR is None:
        log.warning("docs_ui_missing", hint="pip install swagger-ui-py: /docs cannot render")

    @app.get(f"{ASSETS_PATH}/<path:name>")
    @hide
    async def docs_assets(name: str) -> Response:
        if STATIC_DIR is None:
            raise RouteNotFound()
        return await send_from_directory(STATIC_DIR, name)
