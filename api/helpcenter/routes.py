"""``/hc/{org}``: the hosted help center (issue 16), server-rendered HTML without JavaScript.

- No API key: the org comes from the slug (``Directory.org``); an unknown org, a help center
  that is off, a locale not enabled, an unknown category and a question that is not published
  (draft, scheduled, archived, deleted) are a 404 page.
- Every response under ``/hc`` carries ``SECURITY_HEADERS``: a Content-Security-Policy
  without any script (``default-src 'none'``), styles only from the service (the org's
  colour comes from its own stylesheet, ``/hc/{org}/theme.css``, never an inline style),
  images only from the service (a page of an org with ``helpCenter.externalImages`` on also
  from ``https:``: ``page_csp``), ``nosniff`` and ``Referrer-Policy``; the router's 404s there
  become the HTML 404 page.
- Any bytes in a URL give a page, a 404 or a 301 whose ``Location`` is percent-encoded
  (``encoded_url``): the path as routed is decoded, newlines and all.
- ``sitemap.xml`` is a sitemap index of pages ``sitemaps/{n}.xml`` (``api.helpcenter.
  sitemaps``): each page is built from questions read in batches, off the event loop, and
  cached like the other pages.
- Pages are cached like the API's reads: the same ``ResponseCache`` keyed on the org's
  ``lists`` generation (``tenancy.generations``), which every write of questions, categories,
  translations and settings bumps, so a page shows an edit on the next request. The key is the
  page's full URL (scheme, host, path, query; the locale is in the path).
- The question page holds helper V's feedback form (``hc/_feedback.html``: per visitor, with a
  CSRF token): the cached body has ``FEEDBACK_MARKER`` where it goes, and each response
  renders ``hc/_feedback.html`` in its place (``feedback_fragment``; a missing template
  renders nothing, as ``{% include … ignore missing %}`` would). ``g.hc_question`` is set
  before the page is sent, whether it came from the cache or not (V's after-request hook
  counts the view).
"""

from __future__ import annotations

import gzip
from typing import Any
from urllib.parse import quote_plus
from xml.sax.saxutils import escape

import structlog
from jinja2 import TemplateNotFound
from markupsafe import Markup
from markupsafe import escape as html_escape
from quart import Blueprint, Response, current_app, g, redirect, render_template, request
from sqlalchemy.ext.asyncio import AsyncSession

from api.analytics import recording
from api.answers.similar import related_for_readers
from api.categories import visibility
from api.errors import ServiceError
from api.helpcenter import content, llms, pages, sitemaps
from api.helpcenter.assets import assets
from api.helpcenter.pages import BASE_CSS, error_page, page_context, primary_color, site_title
from api.helpcenter.render import DOCUMENTS, answer_html, off_loop, theme_variables
from api.helpcenter.urls import OtherSpelling, PageNotFound, encoded_url, page_locale
from api.helpcenter.visitors import VISITOR_COOKIE, valid_visitor_token
from api.http.authentication import visitor
from api.http.binding import client_address, tenancy
from api.http.conditional import tag_page
from api.http.response_cache import page_key
from api.settings import help_center as hc_settings
from tenancy.db import tenant_session
from tenancy.directory import OrgRecord
from tenancy.generations import LISTS, generation_key, initial_generation
from tenancy.redis import loop_client

log = structlog.get_logger(__name__)

hc = Blueprint("hc", __name__, template_folder="templates", url_prefix="/hc")
hc.after_request(tag_page)  # ETag, 304 on If-None-Match (issue 30: api.http.conditional)
hc.register_blueprint(assets)  # favicon, logo, default theme (issue 32: api.helpcenter.assets)
hc.app_context_processor(pages.default_labels)  # ``_`` of every template (issue 32)

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
__all__ = ["BASE_CSS", "site_title"]  # kept importable from here


@hc.after_app_request
async def security_headers(response: Response) -> Response:
    """Every response under ``/hc`` (these pages, the feedback form's, and the router's own
    404s, which become the HTML not-found page) gets ``SECURITY_HEADERS``."""
    if request.path != "/hc" and not request.path.startswith("/hc/"):
        return response
    if response.status_code in (404, 503) and response.mimetype == "application/json":
        # A path no route of the help center matches; the store down (``api.app``'s 503).
        retry = response.headers.get("Retry-After")
        response = await error_page(response.status_code)
        if retry is not None:
            response.headers["Retry-After"] = retry
    for name, value in SECURITY_HEADERS.items():
        if name == "Content-Security-Policy" and name in response.headers:
            continue  # a page's own (``page_csp``)
        response.headers[name] = value
    response.headers.setdefault("Cache-Control", "no-cache")
    return response


@hc.errorhandler(OtherSpelling)
async def on_other_spelling(error: OtherSpelling) -> Response:
    return redirect(error.location, 301)  # type: ignore[return-value]


@hc.errorhandler(PageNotFound)
async def on_not_found(_error: PageNotFound) -> Response:
    return await not_found_page()


@hc.errorhandler(ServiceError)
async def on_service_error(error: ServiceError) -> Response:
    return await error_page(error.status, dict(error.headers))  # a page (api.helpcenter.pages)


async def not_found_page() -> Response:
    return await error_page(404)


async def enabled_org(slug: str) -> OrgRecord:
    org = await tenancy().directory.org(slug)
    if org is None or org.help_center.get("enabled") is not True:
        raise PageNotFound()
    return org


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


def _session(org: OrgRecord) -> AsyncSession:
    return tenant_session(tenancy().engine, org.schema_name)


async def cached_page(org: OrgRecord, build: Any) -> Response:
    """The page from the cache (same generation), else ``build()`` -> (body, headers) stored."""
    cache = tenancy().cache
    key = page_key(
        f"{request.scheme}://{request.host}", request.path, request.args.items(multi=True)
    )
    generation = await _generation(org) if cache is not None and cache.enabled else None
    if cache is not None and generation is not None:
        hit = cache.get(org.schema_name, key, generation)
        if hit is not None:
            return await _finish(org, hit.body, dict(hit.headers))
    body, kept = await build()
    if cache is not None and generation is not None:
        cache.put(org.schema_name, key, generation, body, headers=tuple(kept.items()))
    return await _finish(org, body, kept)


async def _finish(org: OrgRecord, body: bytes, kept: dict[str, str]) -> Response:
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
    return Response(body, status=200, content_type=content_type, headers=kept)


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


@hc.get("")
@hc.get("/")
async def no_org() -> Response:
    raise PageNotFound()


@hc.get("/<org_slug>")
@hc.get("/<org_slug>/")
async def root(org_slug: str) -> Any:
    """``/hc/{org}`` and ``/hc/{org}/`` (the form the README prints): the default locale's
    home (302: the default locale may change)."""
    org = await enabled_org(org_slug)
    return redirect(f"/hc/{org.slug}/{org.default_locale}", 302)


@hc.get("/<org_slug>/<locale>/")
async def home_slash(org_slug: str, locale: str) -> Any:
    """``/hc/{org}/{locale}/``: 301 to the home's one URL (no trailing slash)."""
    org = await enabled_org(org_slug)
    tag = page_locale(org, locale)
    return redirect(encoded_url(f"/hc/{org.slug}/{tag}"), 301)


@hc.get("/<org_slug>/theme.css")
async def theme(org_slug: str) -> Response:
    org = await enabled_org(org_slug)
    css = theme_variables(primary_color(org)) + BASE_CSS
    return Response(
        css,
        content_type="text/css; charset=utf-8",
        headers={"Cache-Control": "public, max-age=300"},
    )


@hc.get("/<org_slug>/robots.txt")
async def robots(org_slug: str) -> Response:
    org = await enabled_org(org_slug)
    sitemap = f"{request.scheme}://{request.host}/hc/{org.slug}/sitemap.xml"
    text = f"User-agent: *\nAllow: /hc/{org.slug}/\nSitemap: {sitemap}\n"
    root = sitemap.removesuffix("sitemap.xml")
    text += f"# For AI agents (llmstxt.org): {root}llms.txt and {root}llms-full.txt\n"
    return Response(text, content_type="text/plain; charset=utf-8")


def sitemap_root(org: OrgRecord) -> str:
    """The site's root URL, escaped for XML; a forged, overlong ``Host`` gets no sitemap."""
    root = escape(f"{request.scheme}://{request.host}/hc/{org.slug}", {'"': "&quot;"})
    if len(root) > sitemaps.MAX_ROOT:
        raise PageNotFound()
    return root


@hc.get("/<org_slug>/sitemap.xml")
async def sitemap(org_slug: str) -> Response:
    """The sitemap index: one entry per page of ``sitemap_page``."""
    org = await enabled_org(org_slug)
    root = sitemap_root(org)

    async def build() -> tuple[bytes, dict[str, str]]:
        async with _session(org) as session:
            published = await content.published_count(session)
        pages = sitemaps.page_count(published, sitemaps.questions_per_page(org.locales, root))
        body = await off_loop(DOCUMENTS, sitemaps.index_gzip, root, pages)
        return body, {"Content-Type": XML, "Content-Encoding": GZIP}

    return await cached_page(org, build)


@hc.get("/<org_slug>/sitemaps/<int:number>.xml")
async def sitemap_page(org_slug: str, number: int) -> Response:
    """Page ``number`` (from 1) of the sitemap: the next ``questions_per_page`` questions by
    id, each in every enabled locale; past the last page, 404."""
    org = await enabled_org(org_slug)
    root = sitemap_root(org)
    if not 1 <= number <= sitemaps.MAX_SITEMAPS:
        raise PageNotFound()
    per_page = sitemaps.questions_per_page(org.locales, root)
    per_batch = sitemaps.questions_per_batch(org.locales, root, content.SITEMAP_BATCH)

    async def build() -> tuple[bytes, dict[str, str]]:
        out = sitemaps.Gzipped(sitemaps.URLSET_HEAD)
        found = False
        async with _session(org) as session:
            skip = (number - 1) * per_page
            batches = content.published_slugs(session, skip=skip, limit=per_page, batch=per_batch)
            async for batch in batches:
                found = True
                write = sitemaps.write_urls
                await off_loop(DOCUMENTS, write, out, root, org.locales, org.default_locale, batch)
        if not found:
            raise PageNotFound()
        body = await off_loop(DOCUMENTS, out.close, sitemaps.URLSET_TAIL)
        return body, {"Content-Type": XML, "Content-Encoding": GZIP}

    return await cached_page(org, build)


@hc.get("/<org_slug>/<locale>")
async def home(org_slug: str, locale: str) -> Response:
    org = await enabled_org(org_slug)
    tag = page_locale(org, locale)

    async def build() -> tuple[bytes, dict[str, str]]:
        async with _session(org) as session:
            visible = await visibility.visible_categories(session, tag)
            popular = await content.popular(session, tag)
        body = await render_template(
            "hc/home.html",
            **page_context(org, tag, ""),
            cards=content.tree(visible),
            counts=content.visible_counts(visible),
            popular=popular,
        )
        return body.encode(), {}

    return await cached_page(org, build)


@hc.get("/<org_slug>/<locale>/categories/<slug>")
async def category(org_slug: str, locale: str, slug: str) -> Response:
    org = await enabled_org(org_slug)
    tag = page_locale(org, locale)

    async def build() -> tuple[bytes, dict[str, str]]:
        async with _session(org) as session:
            found, questions = await content.category_questions(session, slug, tag)
            items = await visibility.visible_categories(session, tag)
            if not any(c["id"] == found["id"] for c in items):
                raise PageNotFound()  # no published question in it, at any depth: hidden
            children = _subtree(content.tree(items), found["id"])
            previews = await content.first_questions(
                session, [n.category["id"] for n in children], tag, content.SECTION_PREVIEW
            )
        body = await render_template(
            "hc/category.html",
            **page_context(org, tag, f"/categories/{found['slug']}"),
            category=found,
            crumbs=content.ancestors(items, found["id"]),
            children=children,
            counts=content.visible_counts(items),
            previews=previews,
            questions=questions,
        )
        return body.encode(), {}

    return await cached_page(org, build)


def _subtree(nodes: list[content.Node], category_id: str) -> list[content.Node]:
    for node in nodes:
        if node.category["id"] == category_id:
            return node.children
        found = _subtree(node.children, category_id)
        if found:
            return found
    return []


@hc.get("/<org_slug>/<locale>/questions/<slug>")
async def question(org_slug: str, locale: str, slug: str) -> Response:
    org = await enabled_org(org_slug)
    tag = page_locale(org, locale)

    async def build() -> tuple[bytes, dict[str, str]]:
        async with _session(org) as session:
            found = await content.published_or_gone(session, slug, tag)
            items = await content.all_categories(session, tag)
            related = await related_for_readers(session, found["id"], tag)
        html = await answer_html(found["answer"], external_images=external_images(org))
        body = await render_template(
            "hc/question.html",
            **page_context(org, tag, f"/questions/{found['slug']}"),
            question=found,
            answer=Markup(html),  # noqa: S704 - sanitised by nh3
            # The start only, as llms.txt reads it: bounded work on the event loop.
            description=llms.summaries([found["answer"][: llms.SUMMARY_SOURCE]])[0]
            or found["title"],
            crumbs=content.ancestors(items, found["categoryId"]),
            feedback_slot=Markup(FEEDBACK_MARKER),  # noqa: S704 - a constant
            markdown_url=f"/hc/{org.slug}/{tag}/questions/{found['slug']}.md",
            related=related,
            updated=pages.shown_date(tag, found["updatedAt"]),
        )
        return body.encode(), {QUESTION_HEADER: f"{found['id']} {tag} {found['slug']}"}

    return await cached_page(org, build)


@hc.get("/<org_slug>/<locale>/search")
async def search(org_slug: str, locale: str) -> Response:
    org = await enabled_org(org_slug)
    tag = page_locale(org, locale)
    q = " ".join(request.args.get("q", "").split())[: content.MAX_QUERY]

    async def build() -> tuple[bytes, dict[str, str]]:
        async with _session(org) as session:
            results = await content.search(session, visitor(org), q, tag)
        query = f"?q={quote_plus(q)}" if q else ""
        context = page_context(org, tag, "/search", query)
        body = await render_template(
            "hc/search.html",
            **{**context, "q": q},
            results=pages.search_items(results),
            limit=content.SEARCH_RESULTS,
        )
        return body.encode(), {RESULTS_HEADER: str(min(len(results), content.SEARCH_RESULTS))}

    response = await cached_page(org, build)
    results = g.pop("hc_results", None)
    if q and results is not None and recording.enabled(current_app.extensions):
        record_search(org, tag, q, results)
    return response


def reader_visitor(address: str | None = None) -> str:
    """The raw visitor of content analytics (``recording.help_center_visitor``)."""
    header = request.headers.get("Cookie")
    token = None
    if header is not None and VISITOR_COOKIE in header:  # parse cookies only when ours is there
        token = valid_visitor_token(request.cookies.get(VISITOR_COOKIE))
    return recording.help_center_visitor(token, address or client_address())


def record_search(org: OrgRecord, locale: str, q: str, results: int) -> None:
    """A reader's search (content analytics): into the process's buffer, no I/O here."""
    query = recording.normalise_query(q)
    if not query:
        return
    extensions = current_app.extensions
    visitor, at = recording.stamp(extensions, org.id, reader_visitor())
    recording.recorder_for(extensions).search(
        org.id,
        source=recording.HELP_CENTER,
        locale=locale,
        query=query,
        visitor=visitor,
        at=at,
        results=results,
    )
