"""Unit tests of locale tags (api/locales.py): canonical case, CLDR-known tags only."""

from __future__ import annotations

import pytest

from api.locales import canonical_tag


@pytest.mark.parametrize(
    ("tag", "canonical"),
    [
        ("en", "en"),
        ("EN", "en"),
        ("pt-br", "pt-BR"),
        ("zh-hant-tw", "zh-Hant-TW"),
        ("sr-latn", "sr-Latn"),
        ("fr-CH", "fr-CH"),
        ("es-419", "es-419"),
    ],
)
def test_known_tags_come_back_in_canonical_case(tag: str, canonical: str) -> None:
    assert canonical_tag(tag) == canonical


@pytest.mark.parametrize(
    "tag",
    ["", "xx", "qq-QQ", "en-ZZ", "en_US", "en-US-posix", "english", "e", "en-", "-en", "x" * 40],
)
def test_unknown_or_malformed_tags_are_refused(tag: str) -> None:
    assert canonical_tag(tag) is None
