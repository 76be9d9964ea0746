"""``outdated``: the source changed since the translation was last written (issue 15)."""

from __future__ import annotations

from typing import Any

from tests.api.questions.helpers import create
from tests.fixtures.orgs import OrgClient

FR = {"title": "Mot de passe", "answer": "Utilisez le lien."}


async def enable(org: OrgClient) -> None:
    assert (await org.patch("/settings", json={"locales": ["en", "fr"]})).status_code == 200


async def translation(org: OrgClient, kind: str, ref: str) -> dict[str, Any]:
    r = await org.get(f"/{kind}/{ref}/translations/fr", scope="read")
    assert r.status_code == 200, await r.get_json()
    data: dict[str, Any] = (await r.get_json())["data"]
    listed = (await (await org.get(f"/{kind}/{ref}/translations", scope="read")).get_json())["data"]
    assert listed == [data]  # the list says the same
    return data


async def put(org: OrgClient, kind: str, ref: str, body: dict[str, Any]) -> dict[str, Any]:
    r = await org.request("PUT", f"/{kind}/{ref}/translations/fr", json=body, scope="write")
    assert r.status_code in (200, 201), await r.get_json()
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


async def patch(org: OrgClient, kind: str, ref: str, body: dict[str, Any]) -> None:
    r = await org.patch(f"/{kind}/{ref}", json=body, scope="write")
    assert r.status_code == 200, await r.get_json()


async def test_question_source_edits_make_it_outdated_and_a_write_clears_it(
    org: OrgClient,
) -> None:
    await enable(org)
    q = await create(org)
    other = await create(org, title="Another question")
    assert (await put(org, "questions", q["id"], FR))["outdated"] is False
    # Other fields of the question do not touch the translation.
    await patch(org, "questions", q["id"], {"status": "published", "order": 7})
    await patch(org, "questions", q["id"], {"categoryId": q["categoryId"], "slug": "renamed"})
    await patch(org, "questions", q["id"], {"title": q["title"]})  # the same text: no change
    assert (await translation(org, "questions", q["id"]))["outdated"] is False

    for change in ({"title": "A new title"}, {"answer": "A new answer."}):
        await patch(org, "questions", q["id"], change)
        assert (await translation(org, "questions", q["id"]))["outdated"] is True
        # Writing the translation again (any text, any status) clears it.
        cleared = await put(org, "questions", q["id"], {**FR, "status": "published"})
        assert cleared["outdated"] is False
        assert (await translation(org, "questions", q["id"]))["outdated"] is False
    # Changing the source back to what it was when written clears it too (same digest).
    await patch(org, "questions", q["id"], {"answer": "Changed."})
    assert (await translation(org, "questions", q["id"]))["outdated"] is True
    await patch(org, "questions", q["id"], {"answer": "A new answer."})
    assert (await translation(org, "questions", q["id"]))["outdated"] is False
    assert other["id"] != q["id"]


async def test_revision_restore_makes_it_outdated(org: OrgClient) -> None:
    await enable(org)
    q = await create(org, title="First title")
    await patch(org, "questions", q["id"], {"title": "Second title"})
    await put(org, "questions", q["id"], FR)
    r = await org.get(f"/questions/{q['id']}/revisions", scope="read")
    revisions = (await r.get_json())["data"]
    first = next(rev for rev in revisions if rev["snapshot"]["title"] == "First title")
    r = await org.post(f"/questions/{q['id']}/revisions/{first['id']}/restore", scope="write")
    assert r.status_code == 200, await r.get_json()
    assert (await r.get_json())["data"]["title"] == "First title"
    assert (await translation(org, "questions", q["id"]))["outdated"] is True
    assert (await put(org, "questions", q["id"], FR))["outdated"] is False


async def test_category_source_edits_make_it_outdated(org: OrgClient) -> None:
    await enable(org)
    r = await org.post("/categories", json={"name": "Billing"}, scope="write")
    c = (await r.get_json())["data"]
    assert (await put(org, "categories", c["id"], {"name": "Facturation"}))["outdated"] is False
    await patch(org, "categories", c["id"], {"order": 3, "slug": "money"})
    assert (await translation(org, "categories", c["id"]))["outdated"] is False
    for change in ({"name": "Payments"}, {"description": "Cards and invoices"}):
        await patch(org, "categories", c["id"], change)
        assert (await translation(org, "categories", c["id"]))["outdated"] is True
        assert (await put(org, "categories", c["id"], {"name": "Paiements"}))["outdated"] is False
    # Removing the description is a change of the source too.
    await patch(org, "categories", c["id"], {"description": None})
    assert (await translation(org, "categories", c["id"]))["outdated"] is True
