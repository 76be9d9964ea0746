"""The widget's two doors over HTTP (issue 41): ``GET /hc/widget.js`` (a script any origin may
load, cached with an ETag and for ever under its versioned URL, with the labels of every
catalog language in it) and ``POST /api/v1/{org}/questions/{idOrSlug}/votes`` ("Was this
helpful?" with a publishable key: the help center's vote, CORS for the key's origins, the
preflight allowing POST and Content-Type, published questions of the key's org only)."""

from __future__ import annotations

import json
import re
from typing import Any

from quart import Quart
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.helpcenter import widget
from api.helpcenter.visitors import question_votes
from tenancy.db import tenant_session
from tests.api.helpcenter.helpers import enable, new_address, question, set_locales
from tests.api.keys.helpers import OTHER_SITE, SITE, as_key, make_public_key
from tests.fixtures.orgs import OrgClient

PREFLIGHT = {
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization, content-type",
}


def labels_in(script: str) -> dict[str, dict[str, str]]:
    found = re.search(r"const LABELS = (\{.*?\});\n", script, flags=re.S)
    assert found is not None, "no labels in the script"
    labels: dict[str, dict[str, str]] = json.loads(found.group(1))
    return labels


async def votes(engine: AsyncEngine, org: OrgClient) -> list[dict[str, Any]]:
    async with tenant_session(engine, org.info.schema_name) as session:
        rows = await session.execute(select(question_votes))
        return [dict(row._mapping) for row in rows]


async def test_the_script_is_javascript_any_origin_may_load(app: Quart) -> None:
    client = app.test_client()
    r = await client.get("/hc/widget.js", headers={"Origin": OTHER_SITE})
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert r.headers["Cross-Origin-Resource-Policy"] == "cross-origin"
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert "Set-Cookie" not in r.headers
    body = await r.get_data(as_text=True)
    assert "customElements.define(TAG, FaqWidget)" in body
    assert "/*LABELS*/" not in body  # the labels were put in
    # Nothing from another host: no URL in the script but the ones it builds from ``api``.
    assert set(re.findall(r"https?://([\w.-]+)", body)) == {"faq.example.com"}  # a comment


async def test_the_script_carries_english_french_and_arabic_labels(app: Quart) -> None:
    body = await (await app.test_client().get("/hc/widget.js")).get_data(as_text=True)
    labels = labels_in(body)
    assert labels["fr"]["Was this helpful?"] == "Cette réponse vous a-t-elle été utile\u00a0?"
    assert labels["fr"]["Best answer"] == "Meilleure réponse"
    assert labels["ar"]["Help"] == "مساعدة"
    assert labels["ar"]["Search the help center"] == "ابحث في مركز المساعدة"
    # Every widget label is translated in French and Arabic (English is the source).
    for language in ("fr", "ar"):
        missing = [t for t in widget.WIDGET_LABELS if t not in labels[language]]
        assert missing == [], language


async def test_the_script_is_cached_with_an_etag_and_for_ever_when_versioned(app: Quart) -> None:
    client = app.test_client()
    plain = await client.get("/hc/widget.js")
    assert plain.headers["Cache-Control"] == "public, max-age=3600"
    tag = plain.headers["ETag"]
    again = await client.get("/hc/widget.js", headers={"If-None-Match": tag})
    assert again.status_code == 304
    assert await again.get_data() == b""
    other = await client.get("/hc/widget.js", headers={"If-None-Match": '"w-0000"'})
    assert other.status_code == 200
    version = plain.headers["X-Widget-Version"]
    pinned = await client.get(f"/hc/widget.js?v={version}")
    assert pinned.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert await pinned.get_data() == await plain.get_data()
    older = await client.get("/hc/widget.js?v=0123456789abcdef")
    assert older.status_code == 200
    assert older.headers["Cache-Control"] == "public, max-age=3600"


async def test_a_publishable_key_votes_from_a_listed_origin(
    engine: AsyncEngine, org: OrgClient
) -> None:
    await enable(org)
    await set_locales(org, ["en", "fr"])
    published = await question(org, "How do I pay by invoice?", "Ask **billing**.")
    key = (await make_public_key(org))["key"]
    address = new_address()
    r = await as_key(
        org,
        key,
        "POST",
        f"/questions/{published['id']}/votes",
        headers={"Origin": SITE},
        json={"helpful": False, "reason": " No invoice link. ", "locale": "fr"},
        address=address,
    )
    assert r.status_code == 200, await r.get_json()
    assert r.headers["Access-Control-Allow-Origin"] == SITE
    assert (await r.get_json())["data"] == {
        "questionId": published["id"],
        "helpful": False,
        "locale": "fr",
    }
    [row] = await votes(engine, org)
    assert (row["helpful"], row["reason"], row["locale"]) == (False, "No invoice link.", "fr")
    assert address not in row["visitor"]
    # The same reader again, by slug: the vote is replaced, not added; a Yes keeps no reason.
    r = await as_key(
        org,
        key,
        "POST",
        f"/questions/{published['slug']}/votes",
        json={"helpful": True, "reason": "ignored"},
        address=address,
    )
    assert r.status_code == 200
    [row] = await votes(engine, org)
    assert (row["helpful"], row["reason"], row["locale"]) == (True, None, "en")


async def test_the_preflight_of_a_vote_allows_post_with_json(org: OrgClient) -> None:
    await make_public_key(org)
    r = await as_key(
        org, None, "OPTIONS", "/questions/q_x/votes", headers={"Origin": SITE, **PREFLIGHT}
    )
    assert r.status_code == 204
    assert r.headers["Access-Control-Allow-Origin"] == SITE
    assert r.headers["Access-Control-Allow-Methods"] == "POST"
    assert r.headers["Access-Control-Allow-Headers"] == "Authorization, Content-Type"
    r = await as_key(
        org, None, "OPTIONS", "/questions/q_x/votes", headers={"Origin": OTHER_SITE, **PREFLIGHT}
    )
    assert r.status_code == 204
    assert "Access-Control-Allow-Origin" not in r.headers
    # Reads keep their own preflight.
    r = await as_key(
        org,
        None,
        "OPTIONS",
        "/answers",
        headers={"Origin": SITE, "Access-Control-Request-Method": "GET"},
    )
    assert r.headers["Access-Control-Allow-Methods"] == "GET"


async def test_only_published_questions_of_the_keys_org_take_votes(
    engine: AsyncEngine, org: OrgClient, other_org: OrgClient
) -> None:
    draft = await question(org, "Is there a dark mode?", "Soon.", status="draft")
    theirs = await question(other_org, "Do you ship abroad?", "Yes.")
    key = (await make_public_key(org))["key"]
    for ref in (draft["id"], draft["slug"], theirs["id"], theirs["slug"], "q_nope"):
        r = await as_key(
            org, key, "POST", f"/questions/{ref}/votes", json={"helpful": True},
            address=new_address(),
        )  # fmt: skip
        assert r.status_code == 404, ref
        assert (await r.get_json())["error"]["code"] == "question_not_found"
    # The key on the other org's path is that org's 404, whatever the question.
    r = await as_key(
        org, key, "POST", f"/api/v1/{other_org.slug}/questions/{theirs['id']}/votes",
        json={"helpful": True},
    )  # fmt: skip
    assert r.status_code == 404
    assert (await r.get_json())["error"]["code"] == "org_not_found"
    assert await votes(engine, org) == [] and await votes(engine, other_org) == []


async def test_a_vote_that_cannot_be_read_is_a_400(engine: AsyncEngine, org: OrgClient) -> None:
    published = await question(org, "Can I change my plan?", "Any time.")
    key = (await make_public_key(org))["key"]
    path = f"/questions/{published['id']}/votes"
    bodies: list[dict[str, Any]] = [
        {},
        {"helpful": "yes"},
        {"helpful": True, "reason": "x" * 501},
        {"helpful": True, "locale": "de"},  # not a locale of the org
        {"helpful": True, "color": "red"},
    ]
    for body in bodies:
        r = await as_key(org, key, "POST", path, json=body, address=new_address())
        assert r.status_code == 400, body
        assert (await r.get_json())["error"]["code"] == "validation_failed", body
    assert await votes(engine, org) == []


async def test_no_key_or_a_secret_key_without_read_cannot_vote(org: OrgClient) -> None:
    published = await question(org, "Where is my receipt?", "In *Billing*.")
    path = f"/questions/{published['id']}/votes"
    r = await as_key(org, None, "POST", path, json={"helpful": True})
    assert r.status_code == 401
    r = await as_key(org, "faq_pk_not_a_key", "POST", path, json={"helpful": True})
    assert r.status_code == 401


async def test_one_address_votes_at_most_30_times_a_minute(org: OrgClient) -> None:
    published = await question(org, "How do refunds work?", "Within 30 days.")
    key = (await make_public_key(org))["key"]
    address = new_address()
    path = f"/questions/{published['id']}/votes"
    statuses = [
        (await as_key(org, key, "POST", path, json={"helpful": True}, address=address)).status_code
        for _ in range(31)
    ]
    assert statuses[:30] == [200] * 30
    assert statuses[30] == 429
