"""The translators' worklist (issue 15): ``GET /questions?locale=TAG&translation=missing|
outdated|draft|published`` keeps the questions whose translation in TAG is in that state."""

from __future__ import annotations

from typing import Any

from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.questions.helpers import create, default_category, error_code, fields
from tests.api.translations.test_reading import enable_locales, listed, translate
from tests.fixtures.orgs import OrgClient


async def worklist(org: OrgClient, state: str, locale: str = "fr", **query: Any) -> list[str]:
    """Ids of every page of the worklist, following the cursor."""
    ids: list[str] = []
    cursor = None
    while True:
        params = {"locale": locale, "translation": state, "limit": 2, **query}
        if cursor:
            params["cursor"] = cursor
        _, body = await listed(org, "/questions", query=params)
        ids += [q["id"] for q in body["data"]]
        cursor = body["meta"]["pagination"]["cursor"]
        if cursor is None:
            return ids


async def test_each_state_of_the_translation_in_a_locale(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, ["en", "fr", "de"])
    category = await default_category(org)
    qs = [await create(org, category, title=f"Question {i}", order=i) for i in range(7)]
    ids = [q["id"] for q in qs]
    for i in (0, 1):
        await translate(
            org, "questions", ids[i], "fr", title=f"Q {i}", answer="R", status="published"
        )
    for i in (2, 3, 4):
        await translate(org, "questions", ids[i], "fr", title=f"Q {i}", answer="R")
    await translate(org, "questions", ids[5], "de", title="F 5", answer="A", status="published")
    assert await worklist(org, "published") == ids[0:2]
    assert await worklist(org, "draft") == ids[2:5]
    assert await worklist(org, "missing") == ids[5:7]
    assert await worklist(org, "outdated") == []
    assert await worklist(org, "missing", locale="de") == ids[0:5] + ids[6:7]
    assert await worklist(org, "published", locale="de") == [ids[5]]
    # It combines with the other filters.
    assert await worklist(org, "draft", q="question") == ids[2:5]
    assert await worklist(org, "draft", status="published") == []


async def test_outdated_after_patch_and_restore_and_cleared_by_writing(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, ["en", "fr"])
    category = await default_category(org)
    q = await create(org, category, title="Original", answer="Text.")
    other = await create(org, category, title="Other", answer="Text.")
    for made in (q, other):
        await translate(org, "questions", made["id"], "fr", title="Originale", answer="Texte.")
    assert await worklist(org, "outdated") == []
    r = await org.patch(f"/questions/{q['id']}", json={"title": "Changed"}, scope="write")
    assert r.status_code == 200
    r = await org.patch(f"/questions/{other['id']}", json={"order": 5}, scope="write")
    assert r.status_code == 200  # not a translated field: still up to date
    assert await worklist(org, "outdated") == [q["id"]]
    await translate(org, "questions", q["id"], "fr", title="Changée", answer="Texte.")
    assert await worklist(org, "outdated") == []
    _, body = await listed(org, f"/questions/{q['id']}/revisions")
    first = body["data"][-1]["id"]  # the creation's snapshot: title "Original"
    r = await org.post(f"/questions/{q['id']}/revisions/{first}/restore", scope="write")
    assert r.status_code == 200
    assert await worklist(org, "outdated") == [q["id"]]
    assert await worklist(org, "draft") == [q["id"], other["id"]]  # outdated drafts are drafts


async def test_missing_leaves_out_questions_written_in_that_locale(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, ["en", "fr"])
    category = await default_category(org)
    english = await create(org, category, title="In English")
    await enable_locales(app, engine, org, ["en", "fr"], default="fr")
    french = await create(org, category, title="En français")
    assert french["locale"] == "fr"
    assert await worklist(org, "missing") == [english["id"]]
    assert await worklist(org, "missing", locale="en") == [french["id"]]


async def test_worklist_errors(app: Quart, engine: AsyncEngine, org: OrgClient) -> None:
    await enable_locales(app, engine, org, ["en", "fr"])
    for query, field in [
        ({"translation": "missing"}, "translation"),  # needs a locale
        ({"translation": "stale", "locale": "fr"}, "translation"),
        ({"translation": "missing", "locale": "es"}, "locale"),
    ]:
        r = await org.get("/questions", query=query, scope="read")
        assert r.status_code == 400, query
        body = await r.get_json()
        assert error_code(body) == "validation_failed" and fields(body) == {field}
    # A worklist cursor is not a cursor of another state's worklist or of the plain list.
    await create(org, await default_category(org), title="A")
    await create(org, await default_category(org), title="B")
    _, body = await listed(
        org, "/questions", query={"locale": "fr", "translation": "missing", "limit": 1}
    )
    cursor = body["meta"]["pagination"]["cursor"]
    for query in (
        {"locale": "fr", "translation": "draft", "cursor": cursor},
        {"cursor": cursor},
    ):
        r = await org.get("/questions", query=query, scope="read")
        assert r.status_code == 400 and fields(await r.get_json()) == {"cursor"}
