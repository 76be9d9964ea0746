"""Two cache generations per org (issue 14): a create of a question keeps the cached single
reads of the other questions (it bumps only the ``lists`` generation); any other write of
questions, translations or categories makes every cached read fresh. Read-your-writes holds
for each: the writer's next read serves the write."""

from __future__ import annotations

from typing import Any

from quart import Quart
from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncEngine

from api.http.response_cache import ResponseCache
from api.questions.models import Question
from tasks.publishing import publish_due_questions
from tenancy.db import tenant_session
from tests.api.questions.helpers import create
from tests.api.translations.test_reading import enable_locales, translate
from tests.fixtures.orgs import OrgClient

PAST = "2020-01-01T00:00:00.000Z"


def response_cache(app: Quart) -> ResponseCache:
    cache: ResponseCache | None = app.extensions["tenancy"].cache
    assert cache is not None and cache.enabled
    return cache


async def read(
    app: Quart, org: OrgClient, path: str, **query: Any
) -> tuple[int, dict[str, Any], bool]:
    """GET ``path`` as a reader: (status, body, whether the cache served it)."""
    cache = response_cache(app)
    hits = cache.hits
    r = await org.get(path, query=query or None, scope="read")
    return r.status_code, await r.get_json(), cache.hits == hits + 1


async def cached_read(app: Quart, org: OrgClient, path: str, **query: Any) -> dict[str, Any]:
    """Read ``path`` twice: the second read is served from the cache; returns its body."""
    status, first, _ = await read(app, org, path, **query)
    assert status == 200, first
    status, again, hit = await read(app, org, path, **query)
    assert (status, again) == (200, first)
    assert hit, f"{path} was not served from the cache"
    return again


async def test_a_create_keeps_the_cached_single_reads_of_other_questions(
    app: Quart, org: OrgClient
) -> None:
    a = await create(org, title="Question A", status="published")
    before = await cached_read(app, org, f"/questions/{a['id']}")
    by_slug = await cached_read(app, org, f"/questions/{a['slug']}")
    await create(org, title="Question B", status="published")
    for ref, body in ((a["id"], before), (a["slug"], by_slug)):
        status, after, hit = await read(app, org, f"/questions/{ref}")
        assert (status, after) == (200, body)
        assert hit, "a create of another question evicted the cached read of A"


async def test_a_create_shows_in_the_list_and_the_category_at_once(
    app: Quart, org: OrgClient
) -> None:
    a = await create(org, title="Question A", status="published")
    listed = await cached_read(app, org, "/questions", limit=50)
    category = await cached_read(app, org, f"/categories/{a['categoryId']}")
    b = await create(org, title="Question B", status="published")
    status, body, hit = await read(app, org, "/questions", limit=50)
    assert status == 200 and not hit
    assert {q["id"] for q in body["data"]} == {q["id"] for q in listed["data"]} | {b["id"]}
    status, body, hit = await read(app, org, f"/categories/{a['categoryId']}")
    assert status == 200 and not hit
    assert body["data"]["questionCount"] == category["data"]["questionCount"] + 1


async def test_a_missing_question_is_not_cached_so_its_create_is_read_at_once(
    app: Quart, org: OrgClient
) -> None:
    """Only 200 bodies are cached: a create cannot change a cached single read."""
    for _ in range(2):
        status, _body, hit = await read(app, org, "/questions/coming-soon")
        assert status == 404 and not hit
    created = await create(org, title="Coming soon", slug="coming-soon")
    status, body, hit = await read(app, org, "/questions/coming-soon")
    # Reads show the draft (issue 30) and the import's source (issue 29): none.
    expected = {**created, "externalId": None, "draft": None}
    assert (status, body["data"]) == (200, expected) and not hit


async def test_a_patch_makes_the_next_read_fresh(app: Quart, org: OrgClient) -> None:
    a = await create(org, title="Question A")
    await cached_read(app, org, f"/questions/{a['id']}")
    r = await org.patch(f"/questions/{a['id']}", json={"title": "Renamed A"}, scope="write")
    assert r.status_code == 200, await r.get_json()
    status, body, hit = await read(app, org, f"/questions/{a['id']}")
    assert status == 200 and not hit
    assert body["data"]["title"] == "Renamed A"


async def test_a_translation_makes_the_next_read_in_its_locale_fresh(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, ["en", "fr"])
    a = await create(org, title="How do I pay?")
    before = await cached_read(app, org, f"/questions/{a['id']}", locale="fr")
    assert before["data"]["title"] == "How do I pay?"
    await translate(
        org, "questions", a["id"], "fr", title="Comment payer ?", answer="Par carte.",
        status="published",
    )  # fmt: skip
    status, body, hit = await read(app, org, f"/questions/{a['id']}", locale="fr")
    assert status == 200 and not hit
    assert (body["data"]["title"], body["data"]["locale"]) == ("Comment payer ?", "fr")


async def test_a_delete_makes_the_next_read_a_404(app: Quart, org: OrgClient) -> None:
    a = await create(org, title="Question A")
    await cached_read(app, org, f"/questions/{a['slug']}")
    r = await org.delete(f"/questions/{a['id']}", scope="write")
    assert r.status_code == 204
    status, body, hit = await read(app, org, f"/questions/{a['slug']}")
    assert status == 404 and not hit, body


async def test_a_publish_by_the_sweep_makes_the_next_read_fresh(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    a = await create(org, title="Due", scheduledPublishAt=PAST)
    assert (await cached_read(app, org, f"/questions/{a['id']}"))["data"]["status"] == "scheduled"
    assert (await publish_due_questions(engine))["published"] >= 1
    status, body, hit = await read(app, org, f"/questions/{a['id']}")
    assert status == 200 and not hit
    assert body["data"]["status"] == "published"


async def test_an_upsert_of_a_question_makes_the_next_read_fresh(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    """An INSERT that may update (ON CONFLICT DO UPDATE) is not a create."""
    a = await create(org, title="Question A")
    await cached_read(app, org, f"/questions/{a['id']}")
    table = Question.__table__
    async with tenant_session(engine, org.info.schema_name) as session:
        row = (await session.execute(select(table).where(table.c.id == a["id"]))).mappings().one()
        upsert = insert(table).values(dict(row))
        upsert = upsert.on_conflict_do_update(index_elements=[table.c.id], set_={"title": "Up"})
        await session.execute(upsert)
        await session.commit()
    status, body, hit = await read(app, org, f"/questions/{a['id']}")
    assert status == 200 and not hit
    assert body["data"]["title"] == "Up"


async def test_text_sql_through_a_tenant_session_makes_the_next_read_fresh(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    """Text SQL writes a table unknown to the session: every generation moves."""
    a = await create(org, title="Question A")
    await cached_read(app, org, f"/questions/{a['id']}")
    async with tenant_session(engine, org.info.schema_name) as session:
        await session.execute(text("UPDATE questions SET title = 'Raw' WHERE id = :id"), a)
        await session.commit()
    status, body, hit = await read(app, org, f"/questions/{a['id']}")
    assert status == 200 and not hit
    assert body["data"]["title"] == "Raw"


async def test_the_relay_of_a_create_keeps_the_cached_reads_it_did_not_change(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    """The worker's relay of the org's outbox writes no content: the single reads cached
    before a create, and the list cached after it, are served from the cache after the relay
    (its ``LOCK TABLE outbox`` wrote nothing)."""
    from tests.api.audit.conftest import relay

    a = await create(org, title="Question A", status="published")
    await relay(engine, org)
    single = await cached_read(app, org, f"/questions/{a['id']}")
    await create(org, title="Question B", status="published")
    listed = await cached_read(app, org, "/questions")
    assert await relay(engine, org) > 0
    for path, body in ((f"/questions/{a['id']}", single), ("/questions", listed)):
        status, after, hit = await read(app, org, path)
        assert (status, after) == (200, body)
        assert hit, f"{path} was read again from PostgreSQL after the relay"


async def test_bookkeeping_in_text_sql_keeps_cached_reads_and_content_writes_do_not(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    """A delivery's bookkeeping (text SQL writing ``deliveries``, as the worker records a
    wave) changes no content: cached reads survive it. Text SQL writing a content table
    makes them fresh."""
    a = await create(org, title="Question A", status="published")
    body = await cached_read(app, org, f"/questions/{a['id']}")
    async with tenant_session(engine, org.info.schema_name) as session:
        await session.execute(
            text("UPDATE deliveries SET updated_at = updated_at WHERE id = :id"), {"id": "none"}
        )
        await session.commit()
    status, after, hit = await read(app, org, f"/questions/{a['id']}")
    assert (status, after, hit) == (200, body, True)
    async with tenant_session(engine, org.info.schema_name) as session:
        await session.execute(
            text("UPDATE questions SET title = 'Changed' WHERE id = :id"), {"id": a["id"]}
        )
        await session.commit()
    status, after, hit = await read(app, org, f"/questions/{a['id']}")
    assert status == 200 and not hit
    assert after["data"]["title"] == "Changed"
