"""CLDR data is loaded once per locale (issue 26): every page lists each enabled locale by its
own name and has a text direction, and both called Babel's ``Locale.parse`` per page per
locale (up to 100 locales: 200 parses a page, each reading CLDR data)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
from babel import Locale

from billing.plans import Plan
from tests.api.helpcenter.helpers import enable, set_locales
from tests.conftest import OrgFactory
from tests.reliability.test_memory_helpcenter import many_locales


async def test_locale_names_and_directions_are_read_once_per_tag(
    org_factory: OrgFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = await org_factory(Plan.ENTERPRISE)
    await enable(org)
    named = ["en", "fr", "ar", "he"]  # two right-to-left ones
    locales = [*named, *[t for t in many_locales(40) if t not in named]][:30]
    await set_locales(org, locales)
    rtl = {t for t in locales if Locale.parse(t, sep="-").character_order == "right-to-left"}
    assert {"ar", "he"} <= rtl
    parsed: Counter[str] = Counter()
    parse = Locale.parse.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Locale], identifier: Any, *args: Any, **kwargs: Any) -> Locale:
        parsed[str(identifier)] += 1
        return parse(cls, identifier, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(Locale, "parse", classmethod(counting))
    for tag in locales:  # a first page in each locale
        r = await org.client.get(f"/hc/{org.slug}/{tag}/search?q=first")
        assert r.status_code == 200, tag
    parsed.clear()
    # Other pages (not cached: another search) in every locale: no CLDR lookup any more.
    for tag in locales:
        r = await org.client.get(f"/hc/{org.slug}/{tag}/search?q=second")
        body = (await r.get_data()).decode()
        assert r.status_code == 200, tag
        direction = "rtl" if tag in rtl else "ltr"
        assert f'<html lang="{tag}" dir="{direction}">' in body, tag
        assert re.search(r'lang="fr"[^>]*>Français</a>', body), tag
        assert re.search(r'lang="he"[^>]*>עברית</a>', body), tag
    assert parsed == Counter()
