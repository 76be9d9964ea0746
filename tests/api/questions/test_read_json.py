"""The uncached reads' JSON is built by PostgreSQL (issue 14): the bodies of ``GET questions``
and ``GET questions/{ref}`` must stay byte for byte what the app's JSON encoding of the public
shape (``question_public``, orjson) gives, for a question with every field set, in every
locale rule, to secret and publishable keys, over cursors and filters."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from quart import Quart
from sqlalchemy import Engine, event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.questions import queries
from tenancy.db import tenant_session
from tests.api.keys.helpers import as_key, make_public_key
from tests.api.questions.helpers import create
from tests.api.translations.test_reading import enable_locales, translate
from tests.fixtures.orgs import OrgClient

# Every escape a JSON encoder may choose differently: quotes, backslash, each control
# character, the separators JavaScript cares about, non-BMP, HTML-looking text.
TRICKY = 'Say "hi" \\ back\t\n\r\x01\x1f\x7f \u2028\u2029 é 漢字 \U0001f600 </script> &amp;'


@pytest.fixture
def cache_off(app: Quart, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app.extensions["tenancy"], "cache", None)


async def expected_read(
    engine: AsyncEngine, org: OrgClient, ref: str, locale: str, drafts: bool = True
) -> bytes:
    """Today's shape: the public dict of the read (``queries.get_question``), as orjson
    encodes it (the app's JSON provider); ``drafts``: as a secret key reads it."""
    async with tenant_session(engine, org.info.schema_name) as session:
        data = await queries.get_question(session, ref, locale, drafts=drafts)
    return orjson.dumps({"data": data})


async def expected_items(
    engine: AsyncEngine, org: OrgClient, locale: str, drafts: bool = True, **kw: Any
) -> Any:
    async with tenant_session(engine, org.info.schema_name) as session:
        items, _ = await queries.list_questions(
            session,
            limit=100,
            after=None,
            q=None,
            category=None,
            locale=locale,
            drafts=drafts,
            **kw,
        )
    return items


async def seeded(app: Quart, engine: AsyncEngine, org: OrgClient) -> dict[str, Any]:
    """en, fr, de; ``full``: every field set (scheduled, tricky text, negative order), published
    in fr, a draft in de; ``plain``: published; ``edge``: timestamps at the cut of a
    millisecond and a scheduled time at the end of time."""
    await enable_locales(app, engine, org, ["en", "fr", "de"])
    r = await org.post("/categories", json={"name": "Billing", "description": "Money"})
    category = (await r.get_json())["data"]["id"]
    full = await create(
        org,
        category,
        title=f"Title {TRICKY}",
        answer=f"Answer {TRICKY}",
        status="scheduled",
        scheduledPublishAt="2999-05-06T07:08:09.123Z",
        order=-5,
        slug="every-field",
    )
    await translate(
        org, "questions", full["id"], "fr", title=f"Titre {TRICKY}", answer="Réponse « ok »",
        status="published",
    )  # fmt: skip
    await translate(org, "questions", full["id"], "de", title="Titel", answer="Antwort")
    plain = await create(org, category, title="Plain", status="published", order=3)
    edge = await create(org, category, title="Edge", status="draft", order=7, slug="edge")
    async with engine.begin() as conn:
        await conn.execute(
            text(
                f'UPDATE "{org.info.schema_name}".questions SET'
                " created_at = '2026-01-02 03:04:05.999999+00',"
                " updated_at = '2026-01-02 03:04:06.0005+05:30',"
                " scheduled_publish_at = 'infinity'"
                " WHERE id = :id"
            ),
            {"id": edge["id"]},
        )
    return {"full": full, "plain": plain, "edge": edge}


async def test_a_read_is_byte_for_byte_the_public_shape(
    app: Quart, engine: AsyncEngine, org: OrgClient, cache_off: None
) -> None:
    made = await seeded(app, engine, org)
    for name in ("full", "plain", "edge"):
        question = made[name]
        for ref in (question["id"], question["slug"]):
            for locale in ("en", "fr", "de"):
                r = await org.get(f"/questions/{ref}", scope="read", query={"locale": locale})
                assert r.status_code == 200
                body = await r.get_data()
                assert body == await expected_read(engine, org, ref, locale), (name, locale)
                served = "fr" if (name, locale) == ("full", "fr") else "en"
                assert r.headers["Content-Language"] == served
                assert r.headers["Content-Type"] == "application/json"
    r = await org.get("/questions/edge", scope="read")
    data = (await r.get_json())["data"]
    assert data["createdAt"] == "2026-01-02T03:04:05.999Z"  # cut, not rounded
    assert data["updatedAt"] == "2026-01-01T21:34:06.000Z"  # in UTC
    assert data["scheduledPublishAt"] == "9999-12-31T23:59:59.999Z"
    r = await org.get("/questions/every-field", scope="read", query={"locale": "fr"})
    data = (await r.get_json())["data"]
    assert data["title"] == f"Titre {TRICKY}" and data["locale"] == "fr"
    assert data["scheduledPublishAt"] == "2999-05-06T07:08:09.123Z"
    assert (await org.get("/questions/nope", scope="read")).status_code == 404


async def test_a_page_is_byte_for_byte_the_public_shape_over_cursors_and_filters(
    app: Quart, engine: AsyncEngine, org: OrgClient, cache_off: None
) -> None:
    await seeded(app, engine, org)
    for locale in ("en", "fr", "de"):
        for status in (None, "published", "draft", "scheduled"):
            expected = await expected_items(engine, org, locale, status=status)
            got: list[Any] = []
            cursor = None
            while True:
                query: dict[str, Any] = {"limit": 1, "locale": locale}
                if status is not None:
                    query["status"] = status
                if cursor is not None:
                    query["cursor"] = cursor
                r = await org.get("/questions", scope="read", query=query)
                assert r.status_code == 200
                body = await r.get_data()
                page = orjson.loads(body)
                assert body == orjson.dumps(page)  # orjson's own spelling: compact, same escapes
                got += page["data"]
                cursor = page["meta"]["pagination"]["cursor"]
                assert page["meta"]["pagination"]["hasMore"] is (cursor is not None)
                assert page["meta"]["pagination"]["limit"] == 1
                if cursor is None:
                    break
            assert got == expected, (locale, status)
            assert orjson.dumps(got) == orjson.dumps(expected)
    r = await org.get("/questions", scope="read", query={"limit": 20})
    assert await r.get_data() == orjson.dumps(
        {
            "data": await expected_items(engine, org, "en", status=None),
            "meta": {"pagination": {"limit": 20, "cursor": None, "hasMore": False}},
        }
    )


async def test_a_publishable_key_reads_published_questions_only_in_the_same_bytes(
    app: Quart, engine: AsyncEngine, org: OrgClient, cache_off: None
) -> None:
    made = await seeded(app, engine, org)
    key = (await make_public_key(org))["key"]
    r = await as_key(org, key, "GET", "/questions?locale=fr")
    assert r.status_code == 200
    expected = await expected_items(engine, org, "fr", drafts=False, status="published")
    assert [q["id"] for q in expected] == [made["plain"]["id"]]
    assert await r.get_data() == orjson.dumps(
        {"data": expected, "meta": {"pagination": {"limit": 20, "cursor": None, "hasMore": False}}}
    )
    r = await as_key(org, key, "GET", f"/questions/{made['plain']['slug']}")
    assert await r.get_data() == await expected_read(
        engine, org, made["plain"]["slug"], "en", drafts=False
    )
    for hidden in ("full", "edge"):
        r = await as_key(org, key, "GET", f"/questions/{made[hidden]['id']}")
        assert r.status_code == 404
    r = await as_key(org, key, "GET", "/questions?status=draft")
    assert (await r.get_json())["data"] == []


class Statements:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def on_cursor(self, _c: Any, _cur: Any, statement: str, *_: Any) -> None:
        self.sent.append(statement)


@pytest.fixture
def through_sqlalchemy() -> Iterator[Statements]:
    seen = Statements()
    event.listen(Engine, "before_cursor_execute", seen.on_cursor)
    yield seen
    event.remove(Engine, "before_cursor_execute", seen.on_cursor)


async def test_the_hot_reads_skip_sqlalchemys_statement_layer(
    app: Quart, engine: AsyncEngine, org: OrgClient, cache_off: None, through_sqlalchemy: Statements
) -> None:
    """The plain list and the single read send their one statement to the driver directly
    (their JSON comes from PostgreSQL): nothing of the question read passes SQLAlchemy's
    statement layer once the read connection holds the org's binding."""
    question = await create(org, title="Fast", status="published")
    for _ in range(2):  # the first binds a read connection to the org
        assert (await org.get("/questions", scope="read")).status_code == 200
        assert (await org.get(f"/questions/{question['slug']}", scope="read")).status_code == 200
    through_sqlalchemy.sent.clear()
    assert (await org.get("/questions", scope="read")).status_code == 200
    assert (await org.get(f"/questions/{question['slug']}", scope="read")).status_code == 200
    assert [s for s in through_sqlalchemy.sent if "questions" in s] == []


async def test_a_signed_cursor_of_another_shape_is_refused_not_sent_to_postgresql(
    app: Quart, org: OrgClient, cache_off: None
) -> None:
    """Only the service signs cursors, so this takes the secret key; it must still be a 400."""
    await create(org, title="One", status="published")
    for key in (["x", "q_1"], [1], [1, 2], [True, "q_1"]):
        cursor = app.extensions["cursors"].encode("questions", key)
        r = await org.get("/questions", scope="read", query={"cursor": cursor})
        assert r.status_code == 400, key
        assert (await r.get_json())["error"]["details"] == [
            {"field": "cursor", "issue": "not valid"}
        ]
