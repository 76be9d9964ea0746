"""``categoryId`` in a question body takes a category's slug as well as its id (issue 41: as
every other reference does); the question keeps the id. A slug of no live category of this
org is 400 ``category_not_found``, like an unknown id."""

from __future__ import annotations

from tests.api.questions.helpers import error_code
from tests.conftest import OrgFactory


async def test_a_category_slug_names_the_category(org_factory: OrgFactory) -> None:
    org, other = await org_factory(), await org_factory()
    billing = (await (await org.post("/categories", json={"name": "Billing"})).get_json())["data"]
    account = (await (await org.post("/categories", json={"name": "Account"})).get_json())["data"]
    theirs = (await (await other.post("/categories", json={"name": "Theirs"})).get_json())["data"]
    body = {"title": "Refunds?", "answer": "Within 30 days.", "status": "draft"}
    r = await org.post("/questions", json={**body, "categoryId": billing["slug"]})
    assert r.status_code == 201, await r.get_data()
    q = (await r.get_json())["data"]
    assert q["categoryId"] == billing["id"]
    r = await org.patch(f"/questions/{q['id']}", json={"categoryId": account["slug"]})
    assert r.status_code == 200, await r.get_data()
    assert (await r.get_json())["data"]["categoryId"] == account["id"]
    for ref in ("no-such-category", theirs["slug"], theirs["id"]):
        r = await org.post("/questions", json={**body, "title": ref, "categoryId": ref})
        assert r.status_code == 400 and error_code(await r.get_json()) == "category_not_found"
        r = await org.patch(f"/questions/{q['id']}", json={"categoryId": ref})
        assert r.status_code == 400 and error_code(await r.get_json()) == "category_not_found"
    await org.delete(f"/categories/{billing['id']}")
    r = await org.post("/questions", json={**body, "categoryId": billing["slug"]})
    assert r.status_code == 400 and error_code(await r.get_json()) == "category_not_found"
    r = await org.get(f"/questions/{q['id']}")
    assert (await r.get_json())["data"]["categoryId"] == account["id"]
