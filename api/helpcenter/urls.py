"""The help center's URLs and locales: which enabled locale a URL names (another spelling of
one is a 301 to its canonical URL, anything else a 404), a decoded path percent-encoded again
for a ``Location`` (any byte sequence a client sends), and each locale's name and direction
from CLDR (read once per tag)."""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import quote

from babel import Locale, UnknownLocaleError
from quart import request

from api.locales import canonical_tag
from tenancy.directory import OrgRecord


class PageNotFound(Exception):
    pass


class OtherSpelling(Exception):
    """The URL names an enabled locale in another case (``/FR/...``): 301 to its canonical
    spelling, the rest of the URL kept."""

    def __init__(self, location: str) -> None:
        self.location = location


# CLDR data is read once per tag (page locales are enabled tags: at most the plan's cap per
# org; the bound keeps a process's share of them small).
@lru_cache(maxsize=2048)
def locale_name(tag: str) -> str:
    try:
        locale = Locale.parse(tag, sep="-")
        return (locale.get_display_name(locale) or tag).capitalize()
    except (ValueError, UnknownLocaleError):
        return tag


@lru_cache(maxsize=2048)
def direction(tag: str) -> str:
    try:
        return "rtl" if Locale.parse(tag, sep="-").character_order == "right-to-left" else "ltr"
    except (ValueError, UnknownLocaleError):
        return "ltr"


def page_locale(org: OrgRecord, raw: str) -> str:
    """The enabled locale the URL names, else 404; another spelling of one is a 301 to the
    canonical URL (``OtherSpelling``). An enabled locale as spelled in the org's settings is
    canonical already (the settings store canonical tags): no CLDR lookup for it."""
    if raw in org.locales:
        return raw
    tag = canonical_tag(raw)
    if tag is None or tag not in org.locales:
        raise PageNotFound()
    rest = request.path.split("/", 4)[4:]  # after "", "hc", the org and the locale
    raise OtherSpelling(encoded_url(f"/hc/{org.slug}/{tag}{''.join('/' + r for r in rest)}"))


# RFC 3986: what a path segment may hold besides unreserved characters, and "/"; whatever
# else the decoded path holds (a newline, "%", "?", bytes that were not UTF-8) is encoded.
PATH_SAFE = "/!$&'()*+,;=:@"
QUERY_SAFE = PATH_SAFE + "?%"
BROKEN_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")


def encoded_url(path: str) -> str:
    """``path`` (decoded, as routed) and this request's query, percent-encoded for a
    ``Location``: the query keeps its escapes, and anything else is encoded (a "%" that
    starts no escape too)."""
    query = request.query_string
    encoded = quote(path, safe=PATH_SAFE)
    if not query:
        return encoded
    return f"{encoded}?{quote(BROKEN_ESCAPE.sub(b'%25', query), safe=QUERY_SAFE)}"
