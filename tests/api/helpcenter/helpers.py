"""Helpers of the help center tests: turn it on, make content through the API."""

from __future__ import annotations

import itertools
import os
from typing import Any

from tests.api.questions.helpers import create as create_question
from tests.api.questions.helpers import default_category
from tests.fixtures.orgs import OrgClient


async def enable(org: OrgClient, **fields: Any) -> None:
    r = await org.patch("/settings", json={"helpCenter": {"enabled": True, **fields}})
    assert r.status_code == 200, await r.get_json()


async def set_locales(org: OrgClient, locales: list[str]) -> None:
    r = await org.patch("/settings", json={"locales": locales})
    assert r.status_code == 200, await r.get_json()


async def category(org: OrgClient, name: str, parent: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name}
    if parent is not None:
        body["parentId"] = parent
    r = await org.post("/categories", json=body, scope="write")
    assert r.status_code == 201, await r.get_json()
    data: dict[str, Any] = (await r.get_json())["data"]
    return data


async def question(
    org: OrgClient, title: str, answer: str, status: str = "published", **fields: Any
) -> dict[str, Any]:
    category_id = fields.pop("categoryId", None) or await default_category(org)
    return await create_question(
        org, category_id, title=title, answer=answer, status=status, **fields
    )


async def translate(
    org: OrgClient, question_id: str, locale: str, title: str, answer: str, status: str
) -> None:
    body = {"title": title, "answer": answer, "status": status}
    r = await org.request(
        "PUT", f"/questions/{question_id}/translations/{locale}", json=body, scope="write"
    )
    assert r.status_code in (200, 201), await r.get_json()


_addresses = itertools.count(1)


def new_address() -> str:
    """A client address of this call alone (votes, views and pages are limited per address;
    other tests take theirs from 10.0.0.0/8)."""
    n = next(_addresses)
    return f"172.{16 + os.getpid() % 16}.{n // 250 % 250}.{n % 250 + 1}"
