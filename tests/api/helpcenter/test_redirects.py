"""Odd bytes in help-center URLs (issue 26): any path or query gets a 301 to a properly
percent-encoded URL or a 404 page, never a 500. The canonical redirect (an enabled locale
spelled in another case, ``/FR/...``) used to put the decoded path, newline included, into
``Location``."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from tests.api.helpcenter.helpers import enable, question, set_locales
from tests.fixtures.orgs import OrgClient

# Unreserved, reserved and "%" followed by two hex digits: nothing else may be in Location.
ENCODED = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$")

ODD_RESTS = [
    "/questions/a%0Ab",  # newline
    "/questions/a%0Db",  # carriage return
    "/questions/a%0D%0ASet-Cookie:%20x=1",  # a header injection attempt
    "/questions/a%20b",  # space
    "/questions/a%00b",  # NUL
    "/questions/a%ffb",  # not UTF-8
    "/questions/caf%C3%A9",  # unicode
    "/questions/%E2%80%AE%F0%9F%98%80",  # right-to-left override, an emoji
    "/questions/a%25b",  # an encoded "%"
    "/questions/a%2Fb",  # an encoded "/"
    "/questions/a%3Fb%23c",  # encoded "?" and "#"
    "/categories/a%0Ab",
    "/categories/a%00b",
    "/search?q=a%0Ab",
    "/search?q=%00",
    "/search?q=%ff%fe",
    "/search?q=a%zzb",  # a broken escape
    "/search?q=a+b&q=%0D%0A",
    "/nothing/a%0Ab",
    "/a%0Ab",
    "",
]


def allowed(rest: str) -> tuple[int, ...]:
    """301 or 404; a NUL in the query is refused app-wide before any page (400, an HTML page
    under /hc: ``api.app.refuse_nul_characters``)."""
    return (301, 400, 404) if "%00" in rest.partition("?")[2] else (301, 404)


async def test_odd_bytes_after_another_spelling_of_the_locale_redirect_encoded(
    org: OrgClient,
) -> None:
    await enable(org)
    await set_locales(org, ["en", "fr"])
    q = await question(org, "Odd bytes", "Yes.")
    # The issue's own example first: a 500 before, with the newline in Location.
    r = await org.client.get(f"/hc/{org.slug}/FR/questions/a%0Ab")
    assert r.status_code == 301
    assert r.headers["Location"] == f"/hc/{org.slug}/fr/questions/a%0Ab"
    for rest in [*ODD_RESTS, f"/questions/{q['slug']}"]:
        path, _, query = rest.partition("?")
        r = await org.client.get(f"/hc/{org.slug}/FR{rest}")
        assert r.status_code in allowed(rest), (rest, r.status_code)
        assert r.headers["Content-Security-Policy"], rest
        if r.status_code != 301:
            assert "text/html" in r.headers["Content-Type"], rest
            continue
        location = r.headers["Location"]
        assert ENCODED.fullmatch(location), (rest, location)
        target = urlsplit(location)
        # The same page in the canonical spelling: the decoded path kept, character for
        # character (a byte that was not UTF-8 is U+FFFD, as the server decoded it).
        assert unquote(target.path) == unquote(f"/hc/{org.slug}/fr{path}"), (rest, location)
        if query:
            assert target.query, (rest, location)
        followed = await org.client.get(location)
        assert followed.status_code in (200, 404), (rest, location, followed.status_code)
    r = await org.client.get(f"/hc/{org.slug}/FR/questions/{q['slug']}?feedback=thanks")
    assert r.headers["Location"] == f"/hc/{org.slug}/fr/questions/{q['slug']}?feedback=thanks"


async def test_odd_bytes_in_any_spelling_are_a_page_a_redirect_or_a_404(org: OrgClient) -> None:
    await enable(org)
    await set_locales(org, ["en", "fr"])
    for locale in ("en", "fr", "En", "FR", "e%0An", "%00", "%ff", "F%C3%A9", "EN%20"):
        for rest in ODD_RESTS:
            r = await org.client.get(f"/hc/{org.slug}/{locale}{rest}")
            assert r.status_code in (200, *allowed(rest)), (locale, rest, r.status_code)
            if r.status_code == 301:
                assert ENCODED.fullmatch(r.headers["Location"]), (locale, rest)
            if r.status_code == 200:  # the home, and search pages whatever was searched
                assert rest == "" or rest.startswith("/search"), (locale, rest)
    for odd in ("a%0Ab", "%00", "%ff", "caf%C3%A9"):
        r = await org.client.get(f"/hc/{odd}/en")
        assert r.status_code == 404, odd
        r = await org.client.get(f"/hc/{org.slug}/sitemaps/{odd}.xml")
        assert r.status_code == 404, odd
