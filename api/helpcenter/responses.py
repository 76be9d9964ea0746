"""How the help center's pages are answered (issue 16, issue 39): their security headers, the
page cache and the parts of a cached page that differ per visitor.

- ``SECURITY_HEADERS`` go on every response under ``/hc``: a Content-Security-Policy without
  any script (``default-src 'none'``), styles only from the service, images only from the
  service (a page of an org with ``helpCenter.externalImages`` on also from ``https:``:
  ``page_csp``), ``nosniff`` and ``Referrer-Policy``.
- ``cached_page``: pages are cached like the API's reads, in the same ``ResponseCache``, keyed
  on the org's ``lists`` generation (``tenancy.generations``), which every write of questions,
  categories, translations and settings bumps, so a page shows an edit on the next request.
  The key is the page's full URL (scheme, host, path, query; the locale is in the path) and
  what its reader may read (``binding.audience_part``: a signed-in reader's page is never
  served to another reader or an anonymous visitor). A signed-in reader's page is
  ``Cache-Control: private`` (``access.private_headers``).
- Per visitor, put in place on every response, cached or not (``finish``): the question
  page's feedback form (``hc/_feedback.html``: with a CSRF token, ``feedback_fragment``)
  where the body has ``FEEDBACK_MARKER``, and the header's account part (``hc/_account.html``:
  "Sign in", or who is signed in and "Sign out") where it has ``ACCOUNT_MARKER``.
"""

from __future__ import annotations

import gzip
from typing import Any

from jinja2 import TemplateNotFound
from markupsafe import escape as html_escape
from quart import Response, current_app, g, request
from sqlalchemy.ext.asyncio import AsyncSession

from api.helpcenter import access, pages, sitemaps
from api.helpcenter.pages import ACCOUNT_MARKER
from api.helpcenter.render import DOCUMENTS, off_loop
from api.http.binding import audience_part, tenancy
from api.http.response_cache import page_key
from api.settings import help_center as hc_settings
from tenancy.db import tenant_session
from tenancy.directory import OrgRecord
from tenancy.generations import LISTS, generation_key, initial_generation
from tenancy.redis import loop_client

CSP_TEMPLATE = (
    "default-src 'none'; style-src 'self'; img-src {img_src}; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'; connect-src 'self'"
)
# ``connect-src 'self'`` grants nothing a page uses (no script runs: ``script-src`` falls back
# to ``'none'``), but tools that fetch from inside the page, as Lighthouse fetches
# ``/robots.txt``, need it (docs/decisions.md, "Help center pages (issue 41)").
CSP = CSP_TEMPLATE.format(img_src="'self'")  # every response but the pages of an org below
EXTERNAL_IMAGES_CSP = CSP_TEMPLATE.format(img_src="'self' https:")  # helpCenter.externalImages
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "strict-origin-when-cross-origin",
}
HTML = "text/html; charset=utf-8"
FEEDBACK_MARKER = "<!--hc:feedback-->"
FEEDBACK_TEMPLATE = "hc/_feedback.html"
QUESTION_HEADER = "X-HC-Question"  # kept with a cached question page, never sent
RESULTS_HEADER = "X-HC-Results"  # kept with a cached search page (analytics), never sent
XML = f"{sitemaps.XML_TYPE}; charset=utf-8"
GZIP = "gzip"
# The feedback form rendered without its per-visitor token (``feedback_fragment``).
FRAGMENTS: dict[tuple[Any, ...], str] = {}
MAX_FRAGMENTS = 4096
TOKEN_MARKER = "hcCsrfTokenMarker0b6f1d2e9a"  # noqa: S105 - a placeholder, not a secret
ACCOUNT_TEMPLATE = "hc/_account.html"


def external_images(org: OrgRecord) -> bool:
    shown: bool = hc_settings.public(org.help_center, "")["externalImages"]
    return shown


def page_csp(org: OrgRecord) -> str:
    """The Content-Security-Policy of an org's pages: images from other hosts (https) only
    when the org shows them (``render.shown_as_image`` makes the same choice)."""
    return EXTERNAL_IMAGES_CSP if external_images(org) else CSP


async def _generation(org: OrgRecord) -> bytes | None:
    try:
        value = await loop_client().get(generation_key(org.schema_name, LISTS))
    except Exception:  # Redis down: nothing from the cache
        return None
    if value is None:
        return await initial_generation(org.schema_name, LISTS)
    return value if isinstance(value, bytes) else str(value).encode()


def session_of(org: OrgRecord) -> AsyncSession:
    return tenant_session(tenancy().engine, org.schema_name)


async def cached_page(org: OrgRecord, build: Any) -> Response:
    """The page from the cache (same generation), else ``build()`` -> (body, headers) stored."""
    cache = tenancy().cache
    site = f"{request.scheme}://{request.host}"
    reader = audience_part(access.page_principal(org))
    key = page_key(site, request.path, request.args.items(multi=True), reader)
    generation = await _generation(org) if cache is not None and cache.enabled else None
    if cache is not None and generation is not None:
        hit = cache.get(org.schema_name, key, generation)
        if hit is not None:
            return await finish(org, hit.body, dict(hit.headers))
    body, kept = await build()
    if cache is not None and generation is not None:
        cache.put(org.schema_name, key, generation, body, headers=tuple(kept.items()))
    return await finish(org, body, kept)


async def finish(org: OrgRecord, body: bytes, kept: dict[str, str]) -> Response:
    """The response of a page body: the per-visitor feedback form put in its place."""
    content_type = kept.pop("Content-Type", HTML)
    if content_type == HTML:
        kept["Content-Security-Policy"] = page_csp(org)
    if kept.get("Content-Encoding") == GZIP:  # kept compressed (the sitemap)
        kept["Vary"] = "Accept-Encoding"
        if not request.accept_encodings["gzip"]:
            del kept["Content-Encoding"]
            body = await off_loop(DOCUMENTS, gzip.decompress, body)
    question = kept.pop(QUESTION_HEADER, None)
    results = kept.pop(RESULTS_HEADER, None)
    if results is not None:
        g.hc_results = int(results)
    if question is not None:
        question_id, _, rest = question.partition(" ")
        locale, _, slug = rest.partition(" ")
        g.hc_question = {"org": org, "question_id": question_id, "slug": slug, "locale": locale}
        fragment = await feedback_fragment(
            {
                "org": org,
                "question": {"id": question_id, "slug": slug},
                "locale": locale,
                "_": pages.labels(org, locale),
            }
        )
        body = body.replace(FEEDBACK_MARKER.encode(), fragment.encode(), 1)
    if content_type == HTML and ACCOUNT_MARKER.encode() in body:
        account = await account_fragment(org)
        body = body.replace(ACCOUNT_MARKER.encode(), account.encode(), 1)
    response = Response(body, status=200, content_type=content_type, headers=kept)
    if access.page_reader(org) is not None:
        access.private_headers(response)
    return response


async def account_fragment(org: OrgRecord) -> str:
    """The header's account part (``hc/_account.html``) for this request: who is signed in
    and "Sign out", else "Sign in" when the org offers a way in, else nothing."""
    reader = access.page_reader(org)
    here = access.safe_return_to(org, access.here())
    if reader is None and not any(access.sign_in_options(org, here).values()):
        return ""
    locale = (request.view_args or {}).get("locale")
    locale = locale if locale in org.locales else org.default_locale
    template = current_app.jinja_env.get_template(ACCOUNT_TEMPLATE)
    return await template.render_async(
        reader=reader,
        sign_in=access.sign_in_url(org, here),
        sign_out=access.sign_out_url(org),
        here=here,
        _=pages.labels(org, locale),
    )


async def feedback_fragment(context: dict[str, Any]) -> str:
    """``hc/_feedback.html`` (missing: nothing) for this request, without
    ``render_template``'s signals: it runs on every question page, cached or not.

    The form differs per visitor only by its CSRF token: it is rendered once per (org,
    locale, question, thanks or not) with ``TOKEN_MARKER`` for the token (``FRAGMENTS``), and
    each request puts its own token (``hc_csrf_token``, which also gives a new visitor its
    cookie) in place."""
    try:
        template = current_app.jinja_env.get_template(FEEDBACK_TEMPLATE)
    except TemplateNotFound:
        return ""
    await current_app.update_template_context(context)
    org, question, locale = context["org"], context["question"], context["locale"]
    thanks = request.args.get("feedback") == "thanks"
    key = (org.id, org.slug, locale, question["id"], question["slug"], thanks, context["_"].version)
    rendered = FRAGMENTS.get(key)
    if rendered is None:
        rendered = await template.render_async(
            {**context, "thanks": thanks, "csrf_token": TOKEN_MARKER}
        )
        if len(FRAGMENTS) >= MAX_FRAGMENTS:
            FRAGMENTS.pop(next(iter(FRAGMENTS)))
        FRAGMENTS[key] = rendered
    if TOKEN_MARKER not in rendered:  # the thanks: no form
        return rendered
    return rendered.replace(TOKEN_MARKER, str(html_escape(context["hc_csrf_token"](org))), 1)
