"""The help center for agents (issue 31): ``llms.txt`` and ``llms-full.txt`` (the default
locale's at ``/hc/{org}/…``, each enabled locale's at ``/hc/{org}/{locale}/…``) and the Markdown
twin of each question page (``/hc/{org}/{locale}/questions/{slug}.md``). Only while the help
center is on; cached like the pages (``routes.cached_page``: the org's content generation)."""

from __future__ import annotations

from quart import Blueprint, Response, redirect, request

from api.errors import ServiceError
from api.helpcenter import content, llms
from api.helpcenter.routes import (
    _session,
    cached_page,
    enabled_org,
    not_found_page,
    on_service_error,
    site_title,
)
from api.helpcenter.urls import OtherSpelling, PageNotFound, page_locale
from tenancy.directory import OrgRecord

hc_llms = Blueprint("hc_llms", __name__, url_prefix="/hc")


@hc_llms.errorhandler(OtherSpelling)
async def on_other_spelling(error: OtherSpelling) -> Response:
    return redirect(error.location, 301)  # type: ignore[return-value]


@hc_llms.errorhandler(PageNotFound)
async def on_not_found(_error: PageNotFound) -> Response:
    return await not_found_page()


@hc_llms.errorhandler(ServiceError)
async def on_error(error: ServiceError) -> Response:
    return await on_service_error(error)


def _root(org: OrgRecord) -> str:
    return f"{request.scheme}://{request.host}/hc/{org.slug}"


async def _file(org: OrgRecord, locale: str, full: bool) -> Response:
    root = _root(org)

    async def build() -> tuple[bytes, dict[str, str]]:
        write = llms.llms_full_txt if full else llms.llms_txt
        async with _session(org) as session:
            text = await write(session, title=site_title(org), root=root, locale=locale)
        return text.encode(), {"Content-Type": llms.TEXT}

    return await cached_page(org, build)


@hc_llms.get("/<org_slug>/llms.txt")
async def llms_txt(org_slug: str) -> Response:
    """The default locale's ``llms.txt``."""
    org = await enabled_org(org_slug)
    return await _file(org, org.default_locale, full=False)


@hc_llms.get("/<org_slug>/llms-full.txt")
async def llms_full_txt(org_slug: str) -> Response:
    """The default locale's ``llms-full.txt``: every published answer."""
    org = await enabled_org(org_slug)
    return await _file(org, org.default_locale, full=True)


@hc_llms.get("/<org_slug>/<locale>/llms.txt")
async def locale_llms_txt(org_slug: str, locale: str) -> Response:
    org = await enabled_org(org_slug)
    return await _file(org, page_locale(org, locale), full=False)


@hc_llms.get("/<org_slug>/<locale>/llms-full.txt")
async def locale_llms_full_txt(org_slug: str, locale: str) -> Response:
    org = await enabled_org(org_slug)
    return await _file(org, page_locale(org, locale), full=True)


@hc_llms.get("/<org_slug>/<locale>/questions/<slug>.md")
async def question_markdown(org_slug: str, locale: str, slug: str) -> Response:
    """The question page's Markdown twin: its title, answer and page URL."""
    org = await enabled_org(org_slug)
    tag = page_locale(org, locale)
    root = _root(org)

    async def build() -> tuple[bytes, dict[str, str]]:
        async with _session(org) as session:
            found = await content.published_question(session, slug, tag)
        text = llms.question_markdown(found, llms.question_url(root, tag, found["slug"]))
        return text.encode(), {"Content-Type": llms.MARKDOWN}

    return await cached_page(org, build)
