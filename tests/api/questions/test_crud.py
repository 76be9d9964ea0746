"""Create, read, update and delete of questions, by id and by slug."""

from __future__ import annotations

import pytest

from tests.api.questions.helpers import create, default_category, error_code, fields


async def test_create_returns_the_question(org):
    category_id = await default_category(org)
    r = await org.post(
        "/questions",
        json={
            "title": "How do I reset my password?",
            "answer": "Use the link.",
            "categoryId": category_id,
            "status": "draft",
        },
        scope="write",
    )
    assert r.status_code == 201
    q = (await r.get_json())["data"]
    assert q["id"].startswith("q_") and q["id"][2:].isupper() and len(q["id"]) == 28
    assert q["slug"] == "how-do-i-reset-my-password"
    assert q["status"] == "draft"
    assert q["categoryId"] == category_id
    assert q["order"] == 0
    assert q["publishedAt"] is None and q["scheduledPublishAt"] is None
    assert q["createdAt"].endswith("Z") and q["createdAt"] == q["updatedAt"]
    assert set(q) == {
        "id", "slug", "title", "answer", "status", "categoryId", "order", "publishedAt",
        "scheduledPublishAt", "createdAt", "updatedAt",
    }
    for ref in (q["id"], q["slug"]):
        r = await org.get(f"/questions/{ref}", scope="read")
        assert r.status_code == 200
        assert (await r.get_json())["data"] == q
