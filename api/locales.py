"""Locale tags: BCP 47 ``language[-Script][-REGION]`` tags known to CLDR (babel's data),
in canonical case (``pt-br`` -> ``pt-BR``, ``zh-hant-tw`` -> ``zh-Hant-TW``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from babel import Locale, UnknownLocaleError

# language (2-3 letters), optional Script (4 letters), optional REGION (2 letters or 3 digits).
_TAG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z]{4})?(-(?:[A-Za-z]{2}|[0-9]{3}))?$")
MAX_TAG_LENGTH = 35


def canonical_tag(tag: str) -> str | None:
    """The tag in canonical case when CLDR knows it, else None."""
    if len(tag) > MAX_TAG_LENGTH or not _TAG.match(tag):
        return None
    try:
        locale = Locale.parse(tag, sep="-")
    except (UnknownLocaleError, ValueError):
        return None
    parts = [locale.language, locale.script, locale.territory]
    canonical = "-".join(part for part in parts if part)
    # babel may fill in what the tag did not say (likely subtags); keep the tag's own shape.
    if canonical.lower() != tag.lower():
        return None
    return canonical


class LocaleNotEnabled(ValueError):
    """``?locale=`` names a tag that is malformed, unknown or not enabled for the org."""


@dataclass(frozen=True)
class Negotiated:
    """The locale a read is served in, and whether ``Accept-Language`` chose it (no
    ``?locale=``: the header, or its absence, decided; the response varies on it)."""

    locale: str
    varies: bool


def _lookup(tag: str, enabled: dict[str, str]) -> str | None:
    """RFC 4647 lookup: ``zh-Hant-TW``, then ``zh-Hant``, then ``zh``."""
    parts = tag.lower().split("-")
    while parts:
        found = enabled.get("-".join(parts))
        if found is not None:
            return found
        parts.pop()
    return None


def negotiate(
    query_locale: str | None,
    accepted: Iterable[tuple[str, float]] | None,
    enabled: Sequence[str],
    default: str,
) -> Negotiated:
    """The locale of a read: ``?locale=`` when given (canonicalised; not enabled: raises
    ``LocaleNotEnabled``), else the best ``Accept-Language`` entry (``accepted``: the header
    as werkzeug's ``LanguageAccept`` parses it, best quality first, malformed entries dropped;
    ``q=0`` never chosen; None: no header) that an enabled locale serves (``fr-CH`` falls
    back to ``fr``; failing any, ``fr`` takes an enabled ``fr-CA``), else the org's default
    locale. ``*`` means the default."""
    if query_locale is not None:
        tag = canonical_tag(query_locale)
        if tag is None or tag not in enabled:
            raise LocaleNotEnabled(query_locale)
        return Negotiated(tag, False)
    if accepted is None:
        return Negotiated(default, True)
    by_lower = {tag.lower(): tag for tag in enabled}
    wanted = [tag for tag, quality in accepted if quality > 0 and len(tag) <= MAX_TAG_LENGTH]
    for tag in wanted:
        if tag == "*":
            return Negotiated(default, True)
        found = _lookup(tag, by_lower)
        if found is not None:
            return Negotiated(found, True)
    by_language: dict[str, str] = {}
    for tag in (default, *enabled):
        by_language.setdefault(tag.split("-")[0].lower(), tag)
    for tag in wanted:
        found = by_language.get(tag.split("-")[0].lower())
        if found is not None:
            return Negotiated(found, True)
    return Negotiated(default, True)
