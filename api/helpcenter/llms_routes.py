"""The help center for agents (issue 31): ``llms.txt`` and ``llms-full.txt`` (the default
locale's at ``/hc/{org}/…``, each enabled locale's at ``/hc/{org}/{locale}/…``) and the Markdown
twin of each question page (``/hc/{org}/{locale}/questions/{slug}.md``). Only while the help
center is on; cached like the pages (``responses.cached_page``: the org's content generation).
Issue 39: ``llms.txt`` and ``llms-full.txt`` list public content only; a Markdown twin shows what
its page shows to the signed-in reader; in a private help center all are for signed-in readers
only (``access.readable_org``)."""

from __future__ import annotations

from quart import Blueprint, Response, redirect, request

from api.errors import ServiceError
from api.helpcenter import content, llms
from api.helpcenter.access import SignInRequired, page_audiences, readable_org
from api.helpcenter.responses import cached_page, session_of
from api.helpcenter.routes import not_found_page, on_service_error, sign_in_redirect, site_title
from api.helpcenter.urls import OtherSpelling, PageNotFound, page_locale
from tenancy.directory import OrgRecord

hc_llms = Blueprint("hc_llms", __name__, url_prefix="/hc")


@hc_llms.errorhandler(OtherSpelling)
async def on_other_spelling(error: OtherSpelling) -> Response:
    return redirect(error.location, 301)  # type: ignore[return-value]


@hc_llms.errorhandler(SignInRequired)
async def on_sign_in_required(error: SignInRequired) -> Response:
    return sign_in_redirect(error)


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
        async with session_of(org) as session:
            text = await write(session, title=site_title(org), root=root, locale=locale)
        return text.encode(), {"Content-Type": llms.TEXT}

    return await cached_page(org, build)


@hc_llms.get("/<org_slug>/llms.txt")
async def llms_txt(org_slug: str) -> Response:
    """The default locale's ``llms.txt``."""
    org = await readable_org(org_slug)
    return await _file(org, org.default_locale, full=False)


@hc_llms.get("/<org_slug>/llms-full.txt")
async def llms_full_txt(org_slug: str) -> Response:
    """The default locale's ``llms-full.txt``: every published answer."""
    org = await readable_org(org_slug)
    return await _file(org, org.default_locale, full=True)


@hc_llms.get("/<org_slug>/<locale>/llms.txt")
async def locale_llms_txt(org_slug: str, locale: str) -> Response:
    org = await readable_org(org_slug)
    return await _file(org, page_locale(org, locale), full=False)


@hc_llms.get("/<org_slug>/<locale>/llms-full.txt")
async def locale_llms_full_txt(org_slug: str, locale: str) -> Response:
    org = await readable_org(org_slug)
    return await _file(org, page_locale(org, locale), full=True)


@hc_llms.get("/<org_slug>/<locale>/questions/<slug>.md")
async def question_markdown(org_slug: str, locale: str, slug: str) -> Response:
    """The question page's Markdown twin: its title, answer and page URL."""
    org = await readable_org(org_slug)
    tag = page_locale(org, locale)
    root = _root(org)
    audiences = page_audiences(org)  # the twin shows what its page shows (issue 39)

    async def build() -> tuple[bytes, dict[str, str]]:
        async with session_of(org) as session:
            found = await content.published_question(session, slug, tag, audiences)
        text = llms.question_markdown(found, llms.question_url(root, tag, found["slug"]))
        return text.encode(), {"Content-Type": llms.MARKDOWN}

    return await cached_page(org, build)
