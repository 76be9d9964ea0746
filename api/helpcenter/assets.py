"""The help center's files besides its pages (issue 32), a blueprint nested in ``hc`` (so its
error handlers and security headers apply):

- ``/hc/{org}/favicon.ico``: drawn from the org's primary colour (``api.helpcenter.favicon``);
  a page links it with the colour in its query (``?v=``), so it is cached for a day.
- ``/hc/{org}/logo/{digest}.{ext}``: the uploaded logo (``api.helpcenter.theming``), served
  by us only while it is the current one, cached for ever (its digest is in its URL).
- ``/hc/theme.css``: the default look, for the error page of a URL that names no help center.

The help center lives under ``/hc``, so the root's ``/favicon.ico`` is not ours to answer.
Also ``bounded_body``: a request body read up to a limit (the logo's upload)."""

from __future__ import annotations

from quart import Blueprint, Response, request

from api.errors import PayloadTooLarge
from api.helpcenter import favicon, theming
from api.helpcenter.access import enabled_org
from api.helpcenter.pages import BASE_CSS, primary_color
from api.helpcenter.render import DOCUMENTS, off_loop, theme_variables
from api.helpcenter.urls import PageNotFound
from api.http.binding import tenancy
from api.settings import help_center as hc_settings
from tenancy.db import tenant_session

assets = Blueprint("assets", __name__)
FOREVER = "public, max-age=31536000, immutable"


@assets.get("/theme.css")
async def default_theme() -> Response:
    css = theme_variables(hc_settings.DEFAULT_COLOR) + BASE_CSS
    return Response(
        css,
        content_type="text/css; charset=utf-8",
        headers={"Cache-Control": "public, max-age=300"},
    )


@assets.get("/<org_slug>/favicon.ico")
async def org_favicon(org_slug: str) -> Response:
    org = await enabled_org(org_slug)
    icon = await off_loop(DOCUMENTS, favicon.ico, primary_color(org))
    cache = FOREVER if request.args.get("v") else "public, max-age=86400"
    return Response(icon, content_type="image/x-icon", headers={"Cache-Control": cache})


@assets.get("/<org_slug>/logo/<name>")
async def org_logo(org_slug: str, name: str) -> Response:
    org = await enabled_org(org_slug)
    if hc_settings.logo_path(org.help_center) != f"logo/{name}":
        raise PageNotFound()  # none, or an older one
    digest = name.split(".")[0]
    async with tenant_session(tenancy().engine, org.schema_name) as session:
        found = await theming.read_logo(session, digest)
    if found is None:
        raise PageNotFound()
    content_type, data = found
    return Response(data, content_type=content_type, headers={"Cache-Control": FOREVER})


async def bounded_body(limit: int) -> bytes:
    """The request's body, refused (413) past ``limit`` bytes without reading the rest."""
    if request.content_length is not None and request.content_length > limit:
        raise PayloadTooLarge(f"At most {limit} bytes.")
    data = bytearray()
    async for chunk in request.body:
        data.extend(chunk)
        if len(data) > limit:
            raise PayloadTooLarge(f"At most {limit} bytes.")
    return bytes(data)
