"""``/hc/{org}``: the hosted help center (issue 16), server-rendered HTML without JavaScript.

- No API key: the org comes from the slug (``Directory.org``); an unknown org, a help center
  that is off, a locale not enabled, an unknown category and a question that is not published
  (draft, scheduled, archived, deleted) are a 404 page.
- Every response under ``/hc`` carries ``SECURITY_HEADERS`` (``api.helpcenter.responses``);
  the router's 404s there become the HTML 404 page.
- Any bytes in a URL give a page, a 404 or a 301 whose ``Location`` is percent-encoded
  (``encoded_url``): the path as routed is decoded, newlines and all.
- ``sitemap.xml`` is a sitemap index of pages ``sitemaps/{n}.xml`` (``api.helpcenter.
  sitemaps``): each page is built from questions read in batches, off the event loop, and
  cached like the other pages. Sitemaps and ``robots.txt`` show public content only, always;
  a private help center has no sitemap and its ``robots.txt`` disallows it.
- Issue 39: every page reads what its reader may read (``access.page_audiences``: a reader
  signed in to the help center, else the anonymous visitor); a private help center
  (``helpCenter.access: "signed-in"``) sends anonymous visitors to the sign-in page
  (``access.readable_org``). Pages are cached per reader's audiences (``responses``).
- The question page holds helper V's feedback form (``responses.feedback_fragment``).
  ``g.hc_question`` is set before the page is sent, whether it came from the cache or not
  (V's after-request hook counts the view).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote_plus
from xml.sax.saxutils import escape

import structlog
from markupsafe import Markup
from quart import Blueprint, Response, current_app, g, redirect, render_template, request

from api.analytics import recording
from api.answers.similar import related_for_readers
from api.categories import visibility
from api.errors import ServiceError
from api.helpcenter import content, llms, pages, sitemaps
from api.helpcenter.access import (
    SignInRequired,
    access,
    enabled_org,
    is_private,
    page_audiences,
    page_principal,
    readable_org,
)
from api.helpcenter.assets import assets
from api.helpcenter.pages import BASE_CSS, error_page, page_context, primary_color, site_title
from api.helpcenter.render import DOCUMENTS, answer_html, off_loop, theme_variables
from api.helpcenter.responses import (
    FEEDBACK_MARKER,
    GZIP,
    QUESTION_HEADER,
    RESULTS_HEADER,
    SECURITY_HEADERS,
    XML,
    cached_page,
    external_images,
    session_of,
)
from api.helpcenter.urls import OtherSpelling, PageNotFound, encoded_url, page_locale
from api.helpcenter.visitors import VISITOR_COOKIE, valid_visitor_token
from api.http.binding import client_address
from api.http.conditional import tag_page
from tenancy.directory import OrgRecord

log = structlog.get_logger(__name__)

hc = Blueprint("hc", __name__, template_folder="templates", url_prefix="/hc")
hc.after_request(tag_page)  # ETag, 304 on If-None-Match (issue 30: api.http.conditional)
hc.register_blueprint(assets)  # favicon, logo, default theme (issue 32: api.helpcenter.assets)
hc.register_blueprint(access)  # sign-in, sign-out (issue 39: api.helpcenter.access)
hc.app_context_processor(pages.default_labels)  # ``_`` of every template (issue 32)

__all__ = ["BASE_CSS", "enabled_org", "site_title"]  # kept importable from here


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


@hc.errorhandler(SignInRequired)
async def on_sign_in_required(error: SignInRequired) -> Response:
    return sign_in_redirect(error)


def sign_in_redirect(error: SignInRequired) -> Response:
    """An anonymous visitor of a private help center: to its sign-in page (302)."""
    return Response(status=302, headers={"Location": error.location, "Cache-Control": "no-store"})


@hc.errorhandler(PageNotFound)
async def on_not_found(_error: PageNotFound) -> Response:
    return await not_found_page()


@hc.errorhandler(ServiceError)
async def on_service_error(error: ServiceError) -> Response:
    return await error_page(error.status, dict(error.headers))  # a page (api.helpcenter.pages)


async def not_found_page() -> Response:
    return await error_page(404)


@hc.get("")
@hc.get("/")
async def no_org() -> Response:
    raise PageNotFound()


@hc.get("/<org_slug>")
@hc.get("/<org_slug>/")
async def root(org_slug: str) -> Any:
    """``/hc/{org}`` and ``/hc/{org}/`` (the form the README prints): the default locale's
    home (302: the default locale may change)."""
    org = await readable_org(org_slug)
    return redirect(f"/hc/{org.slug}/{org.default_locale}", 302)


@hc.get("/<org_slug>/<locale>/")
async def home_slash(org_slug: str, locale: str) -> Any:
    """``/hc/{org}/{locale}/``: 301 to the home's one URL (no trailing slash)."""
    org = await readable_org(org_slug)
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
    if is_private(org):  # issue 39: nothing of a private help center is for crawlers
        text = f"User-agent: *\nDisallow: /hc/{org.slug}/\n"
        return Response(text, content_type="text/plain; charset=utf-8")
    sitemap = f"{request.scheme}://{request.host}/hc/{org.slug}/sitemap.xml"
    text = f"User-agent: *\nAllow: /hc/{org.slug}/\nSitemap: {sitemap}\n"
    root = sitemap.removesuffix("sitemap.xml")
    text += f"# For AI agents (llmstxt.org): {root}llms.txt and {root}llms-full.txt\n"
    return Response(text, content_type="text/plain; charset=utf-8")


def sitemap_root(org: OrgRecord) -> str:
    """The site's root URL, escaped for XML; a forged, overlong ``Host`` gets no sitemap, nor
    does a private help center."""
    if is_private(org):
        raise PageNotFound()
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
        async with session_of(org) as session:
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
        async with session_of(org) as session:
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
    org = await readable_org(org_slug)
    tag = page_locale(org, locale)
    audiences = page_audiences(org)

    async def build() -> tuple[bytes, dict[str, str]]:
        async with session_of(org) as session:
            visible = await visibility.visible_categories(session, tag, audiences)
            popular = await content.popular(session, tag, audiences)
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
    org = await readable_org(org_slug)
    tag = page_locale(org, locale)
    audiences = page_audiences(org)

    async def build() -> tuple[bytes, dict[str, str]]:
        async with session_of(org) as session:
            found, questions = await content.category_questions(session, slug, tag, audiences)
            items = await visibility.visible_categories(session, tag, audiences)
            if not any(c["id"] == found["id"] for c in items):
                raise PageNotFound()  # no published question in it, at any depth: hidden
            children = _subtree(content.tree(items), found["id"])
            ids = [n.category["id"] for n in children]
            previews = await content.first_questions(
                session, ids, tag, content.SECTION_PREVIEW, audiences
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
    org = await readable_org(org_slug)
    tag = page_locale(org, locale)
    audiences = page_audiences(org)

    async def build() -> tuple[bytes, dict[str, str]]:
        async with session_of(org) as session:
            found = await content.published_or_gone(session, slug, tag, audiences)
            items = await content.all_categories(session, tag, audiences)
            related = await related_for_readers(session, found["id"], tag, audiences=audiences)
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
    org = await readable_org(org_slug)
    tag = page_locale(org, locale)
    q = " ".join(request.args.get("q", "").split())[: content.MAX_QUERY]

    async def build() -> tuple[bytes, dict[str, str]]:
        async with session_of(org) as session:
            results = await content.search(session, page_principal(org), q, tag)
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
    token = None
    # Cookies are parsed only when ours is there (HTTP/2 may split them into several headers).
    if any(VISITOR_COOKIE in header for header in request.headers.getlist("Cookie")):
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
        audiences=recording.audiences_of(page_principal(org)),
    )
