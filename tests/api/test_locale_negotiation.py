"""Unit tests of the locale a read is served in (api/locales.py ``negotiate``): ``?locale=``
first, then ``Accept-Language`` as werkzeug parses it (quality values, malformed parts), with
fallback from a region or script tag to its language, else the org's default."""

from __future__ import annotations

import pytest
from werkzeug.datastructures import LanguageAccept
from werkzeug.http import parse_accept_header

from api.locales import LocaleNotEnabled, Negotiated, negotiate

ENABLED = ("en", "fr", "de", "pt-BR", "zh-Hant")


def chosen(header: str | None, enabled: tuple[str, ...] = ENABLED, default: str = "en") -> str:
    accepted = None if header is None else parse_accept_header(header, LanguageAccept)
    return negotiate(None, accepted, enabled, default).locale


@pytest.mark.parametrize(
    ("header", "locale"),
    [
        ("fr", "fr"),
        ("FR", "fr"),
        ("fr-CH", "fr"),  # region falls back to the language
        ("fr-ch, de;q=0.5", "fr"),
        ("de;q=0.5, fr;q=0.9", "fr"),  # quality, not order, decides
        ("es, de;q=0.2", "de"),  # the first that an enabled locale serves
        ("de;q=0, fr;q=0.1", "fr"),  # q=0: never
        ("de;q=0", "en"),
        ("pt-br", "pt-BR"),
        ("pt", "pt-BR"),  # a language takes an enabled regional variant
        ("zh-Hant-TW", "zh-Hant"),
        ("*", "en"),
        ("es, ja", "en"),  # nothing enabled: the org's default
        ("", "en"),
        (None, "en"),
        ("de;q=abc, ,;;, fr;q=0.4", "fr"),  # malformed parts are ignored
        ("x" * 60 + ", de", "de"),
    ],
)
def test_accept_language(header: str | None, locale: str) -> None:
    assert chosen(header) == locale


def test_the_org_default_is_the_fallback_not_the_first_enabled() -> None:
    assert chosen("ja", enabled=("en", "fr"), default="fr") == "fr"
    assert chosen("*", enabled=("en", "fr"), default="fr") == "fr"


def test_the_exact_region_wins_over_the_language() -> None:
    assert chosen("fr-CA, fr;q=0.9", enabled=("en", "fr", "fr-CA")) == "fr-CA"
    assert chosen("fr-BE", enabled=("en", "fr", "fr-CA")) == "fr"


def test_a_locale_parameter_wins_and_is_canonicalised() -> None:
    header = parse_accept_header("de", LanguageAccept)
    assert negotiate("PT-br", header, ENABLED, "en") == Negotiated("pt-BR", varies=False)
    assert negotiate(None, header, ENABLED, "en") == Negotiated("de", varies=True)
    assert negotiate(None, None, ENABLED, "en") == Negotiated("en", varies=True)


@pytest.mark.parametrize("tag", ["es", "xx", "fr_FR", "", "fr-CH", "x" * 40])
def test_a_locale_parameter_not_enabled_is_refused(tag: str) -> None:
    with pytest.raises(LocaleNotEnabled):
        negotiate(tag, None, ENABLED, "en")
