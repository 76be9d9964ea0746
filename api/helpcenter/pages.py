"""What every page of the help center shows around its content (issue 32), and its error pages.

- ``page_context``: the site (title, logo, header and footer links, legal text, the theme's
  stylesheet and the favicon), the page (locale, direction, canonical URL, alternates) and
  ``_``, the page's labels (``api.helpcenter.i18n.Labels``: the org's override, else the
  catalog of the page's language, else English, per label).
- ``error_page``: a 404, a 410 (a deleted question), a 503 (the store is down), a refusal of
  the feedback form (its own title and message: ``error=``) or another error as a page of the
  help center, in the visitor's language when the URL names an org and one of its locales
  (else the org's default locale, else English), with the header, its search box and a link
  home. Never cached; ``noindex``. ``standalone_context``: the same page without an org (the
  rate limiter's 429, ``api.helpcenter.limits``), in a given language.
- ``shown_date``: a date as the visitor's locale writes it (CLDR's long format, by Babel) and
  as ``<time datetime>`` reads it (issue 41: "Updated <date>" on a question page).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from babel import Locale, UnknownLocaleError
from babel.dates import format_date
from markupsafe import Markup
from quart import Response, g, render_template, request

from api.helpcenter.i18n import ENGLISH, Labels, labels_for
from api.helpcenter.urls import direction, locale_name
from api.http.binding import tenancy
from api.settings import help_center as hc_settings
from tenancy.directory import OrgRecord

HTML = "text/html; charset=utf-8"
# Where the header's account part goes (``responses.account_fragment``: per visitor).
ACCOUNT_MARKER = "<!--hc:account-->"
BASE_CSS = (Path(__file__).parent / "static" / "hc.css").read_text(encoding="utf-8")
# status -> (title, message) of its error page (English msgids, translated per page).
ERRORS = {
    404: ("Page not found", "There is no such page in this help center."),
    410: (
        "This question was removed",
        "This question is no longer available. Try searching for another answer.",
    ),
    503: (
        "Temporarily unavailable",
        "The help center cannot show this page right now. Please try again in a moment.",
    ),
}
OTHER_ERROR = ("Something went wrong", "Please try again in a moment.")


def site_title(org: OrgRecord) -> str:
    title = org.help_center.get("title")
    return title if isinstance(title, str) and title else f"{org.slug} help center"


def primary_color(org: OrgRecord) -> str:
    color: str = hc_settings.public(org.help_center, "")["primaryColor"]
    return color


def labels(org: OrgRecord, locale: str) -> Labels:
    """The labels of ``org``'s pages in ``locale`` (kept on ``g`` for the request's other
    templates: the feedback form)."""
    found = g.get("hc_labels")
    if isinstance(found, Labels) and found.locale == locale:
        return found
    chosen = labels_for(locale, org.help_center)
    g.hc_labels = chosen
    return chosen


async def default_labels() -> dict[str, Any]:
    """Template context: ``_`` of a template rendered without ``page_context`` (English
    unless the request chose its labels). Async: a sync processor costs a thread hop."""
    return {"_": g.get("hc_labels") or ENGLISH}


def _links(value: Any) -> list[dict[str, str]]:
    return [link for link in value if isinstance(link, dict)] if isinstance(value, list) else []


def site_context(org: OrgRecord, locale: str) -> dict[str, Any]:
    theme = hashlib.sha256(f"{primary_color(org)}{len(BASE_CSS)}".encode()).hexdigest()[:10]
    hc = org.help_center
    logo = hc_settings.logo_path(hc)
    legal = hc.get("legalText")
    shown = hc_settings.public(hc, "")
    return {
        "title": site_title(org),
        "base": f"/hc/{org.slug}/{locale}",
        "home": f"/hc/{org.slug}/{locale}",
        "search": f"/hc/{org.slug}/{locale}/search",
        "theme_url": f"/hc/{org.slug}/theme.css?v={theme}",
        "favicon_url": f"/hc/{org.slug}/favicon.ico?v={theme}",
        "logo_url": f"/hc/{org.slug}/{logo}" if logo else None,
        "header_links": _links(hc.get("headerLinks")),
        "footer_links": _links(hc.get("footerLinks")),
        "legal_lines": legal.split("\n") if isinstance(legal, str) and legal else [],
        "contact_url": shown["contactUrl"],
        "icons": shown["categoryIcons"],
    }


def page_context(org: OrgRecord, locale: str, rest: str, query: str = "") -> dict[str, Any]:
    """What every page shows: the site, the canonical URL and the alternates (the same page
    in each enabled locale), and the page's labels (``_``)."""
    root = f"{request.scheme}://{request.host}/hc/{org.slug}"
    alternates = [
        {"locale": tag, "href": f"{root}/{tag}{rest}{query}", "name": locale_name(tag)}
        for tag in org.locales
    ]
    return {
        "site": site_context(org, locale),
        "page": {
            "locale": locale,
            "dir": direction(locale),
            "canonical": f"{root}/{locale}{rest}{query}",
            "alternates": alternates,
            "x_default": f"{root}/{org.default_locale}{rest}{query}",
        },
        "q": "",
        "_": labels(org, locale),
        "account_slot": Markup(ACCOUNT_MARKER),  # noqa: S704 - a constant
    }


@lru_cache(maxsize=2048)
def _date_locale(tag: str) -> Locale:
    try:
        return Locale.parse(tag, sep="-")
    except (ValueError, UnknownLocaleError):
        return Locale("en")


def shown_date(tag: str, iso: str) -> dict[str, str] | None:
    """``{"text", "datetime"}`` of an ISO timestamp in locale ``tag`` (``28 novembre 2026``
    and ``2026-11-28``), or None when it does not parse."""
    try:
        day = datetime.fromisoformat(iso).date()
    except (TypeError, ValueError):
        return None
    return {"text": format_date(day, "long", locale=_date_locale(tag)), "datetime": str(day)}


def search_items(results: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Search results for the page: a result's ``snippet`` (safe HTML with ``<mark>``, made
    by the search) becomes ``snippet_html``, shown under its title."""
    out = []
    for item in results:
        snippet = item.get("snippet")
        shown = Markup(snippet) if isinstance(snippet, str) and snippet else None  # noqa: S704
        out.append({**item, "snippet_html": shown})
    return out


async def _error_org() -> tuple[OrgRecord | None, str]:
    """The org and locale of the URL, when the URL names an org with its help center on."""
    args = request.view_args or {}
    slug = args.get("org_slug")
    if not isinstance(slug, str):
        parts = request.path.split("/")
        slug = parts[2] if len(parts) > 2 and parts[1] == "hc" else None
    if not slug:
        return None, "en"
    try:
        org = await tenancy().directory.org(slug)
    except Exception:  # the store is down: the page in English, without the org's look
        return None, "en"
    if org is None or org.help_center.get("enabled") is not True:
        return None, "en"
    locale = args.get("locale")
    if not isinstance(locale, str):
        parts = request.path.split("/")
        locale = parts[3] if len(parts) > 3 else ""
    return org, locale if locale in org.locales else org.default_locale


def standalone_context(locale: str) -> dict[str, Any]:
    """The context of ``hc/error.html`` without an org (no org's look, no search box), its
    labels the catalog's of ``locale`` (a catalog language or English: no override)."""
    return {
        "site": None,
        "page": {"locale": locale, "dir": direction(locale), "alternates": [], "canonical": None},
        "q": "",
        "_": ENGLISH if locale == "en" else Labels(locale),
    }


async def error_page(
    status: int,
    headers: dict[str, str] | None = None,
    *,
    error: tuple[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
) -> Response:
    """The error page of ``status`` for this request (see the module's doc): ``error`` is its
    (title, message), English msgids of ``LABELS`` (else ``ERRORS``' of the status), and
    ``values`` fill the message's placeholders."""
    org, locale = await _error_org()
    title, message = error or ERRORS.get(status, OTHER_ERROR)
    if org is not None:
        context = page_context(org, locale, "")
        context["page"] = {**context["page"], "alternates": [], "canonical": None}
        context["account_slot"] = None
    else:
        context = standalone_context("en")
    body = await render_template(
        "hc/error.html",
        **context,
        status=status,
        title=title,
        message=message,
        values=values or {},
    )
    response = Response(body, status=status, content_type=HTML, headers=headers or {})
    response.headers["Cache-Control"] = "no-store"
    return response
