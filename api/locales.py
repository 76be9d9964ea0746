"""Locale tags: BCP 47 ``language[-Script][-REGION]`` tags known to CLDR (babel's data),
in canonical case (``pt-br`` -> ``pt-BR``, ``zh-hant-tw`` -> ``zh-Hant-TW``)."""

from __future__ import annotations

import re

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
