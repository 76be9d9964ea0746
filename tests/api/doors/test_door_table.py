"""One door (issue 40), the parity table: the same act tried through every way in that can
do it (REST, MCP, an import uploaded over REST, ``faq import``), with the same rules each
time. Each door is an adapter over the same command (``service.create_question`` and its batch
version), so each row of a table below must come out the same: the same refusal (code) for the
same forbidden act, the same actor in the audit log, and the audit snapshot exactly what
``GET`` returns. A door that cannot do an act (MCP never publishes; the CLI is the operator,
holding every scope) has no cell in that table, by design.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.imports.run import run_import
from billing.plans import Plan
from tests.api.audit.conftest import relayed_audit
from tests.api.keys.helpers import as_key
from tests.api.mcp.conftest import connect, mcp_url, served
from tests.api.members.helpers import make_member, member_actor, member_key
from tests.api.questions.helpers import default_category, error_code
from tests.api.questions.test_review import require_review
from tests.conftest import OrgFactory
from tests.fixtures.bounded import ApiProcess
from tests.fixtures.orgs import OrgClient
from tests.test_cli import faq

__all__ = ["served"]
pytestmark = pytest.mark.slow

# An outcome: ("created", "") or ("refused", the error code).
Outcome = tuple[str, str]
Door = Callable[["Ctx", str | None, str, str], Awaitable[Outcome]]


class Ctx:
    def __init__(self, org: OrgClient, engine: AsyncEngine, api: ApiProcess, tmp: Path) -> None:
        self.org, self.engine, self.api, self.tmp = org, engine, api, tmp


async def rest(ctx: Ctx, key: str | None, title: str, status: str) -> Outcome:
    body = {
        "title": title,
        "answer": "Within 30 days.",
        "categoryId": await default_category(ctx.org),
        "status": status,
    }
    r = await as_key(ctx.org, key, "POST", "/questions", json=body)
    if r.status_code == 201:
        return "created", ""
    return "refused", error_code(await r.get_json())


async def mcp(ctx: Ctx, key: str | None, title: str, status: str) -> Outcome:
    assert status == "draft"  # the tool only ever proposes drafts
    async with connect(mcp_url(ctx.api, ctx.org.slug), key or "") as client:
        done = await client.call_tool("create_draft", {"title": title, "answer": "Within 30 days."})
    if done.is_error:
        text = done.content[0].text  # type: ignore[union-attr]
        return "refused", text.split(":")[0]  # "code: message", as REST answers them
    return "created", ""


def _csv(title: str, status: str) -> bytes:
    return f"title,answer,status\n{title},Within 30 days.,{status}\n".encode()


def _import_outcome(report: dict[str, Any]) -> Outcome:
    if report["counts"]["failed"]:
        return "refused", report["errors"][0]["issue"].split(":")[0]  # "code: message"
    return "created", ""


async def upload(ctx: Ctx, key: str | None, title: str, status: str) -> Outcome:
    r = await as_key(
        ctx.org,
        key,
        "POST",
        "/imports?format=csv",
        data=_csv(title, status),
        headers={"Content-Type": "text/csv"},
    )
    if r.status_code != 202:
        return "refused", error_code(await r.get_json())
    job = (await r.get_json())["data"]
    report = await run_import(ctx.engine, ctx.org.info.id, job["id"])
    assert report is not None
    return _import_outcome(report)


async def cli(ctx: Ctx, _key: str | None, title: str, status: str) -> Outcome:
    path = ctx.tmp / f"{abs(hash(title))}.csv"
    path.write_bytes(_csv(title, status))
    done = await asyncio.to_thread(faq, "import", ctx.org.slug, str(path), "--format", "csv")
    assert done.returncode in (0, 2), done.stderr
    return _import_outcome(json.loads(done.stdout))


DOORS: dict[str, Door] = {"rest": rest, "mcp": mcp, "import": upload, "cli": cli}


async def _by_title(org: OrgClient, title: str) -> dict[str, Any]:
    r = await org.get("/questions", query={"limit": 100}, scope="read")
    found = [q for q in (await r.get_json())["data"] if q["title"] == title]
    assert len(found) == 1, found
    question: dict[str, Any] = found[0]
    return question


async def test_the_same_rules_through_every_door(
    org_factory: OrgFactory, engine: AsyncEngine, served: ApiProcess, tmp_path: Path
) -> None:
    org = await org_factory(Plan.PRO)
    ctx = Ctx(org, engine, served, tmp_path)
    author = await make_member(org, "author")
    author_key = await member_key(org, author, ["write"])
    owner = await make_member(org, "admin")  # imports are an admin's (issue 29)
    owner_key = await member_key(org, owner, ["admin"])
    creators = {"rest": author_key, "mcp": author_key, "import": owner_key, "cli": None}
    viewer = await make_member(org, "viewer")
    viewer_key = await member_key(org, viewer, ["read"])

    # A member who may only read cannot create, whatever the door (the CLI is the operator).
    refused = {
        door: await DOORS[door](ctx, viewer_key, f"Read-only via {door}", "draft")
        for door in ("rest", "mcp", "import")
    }
    assert refused == {door: ("refused", "insufficient_scope") for door in refused}

    # The member is the actor of what it creates, and the audit snapshot is GET's body.
    created = {
        door: await DOORS[door](ctx, key, f"Made via {door}", "draft")
        for door, key in creators.items()
    }
    assert {door: kind for door, (kind, _) in created.items()} == dict.fromkeys(created, "created")
    entries = await relayed_audit(engine, org, resource="question")
    actors: dict[str, Any] = {}
    for door in created:
        question = await _by_title(org, f"Made via {door}")
        entry = next(
            e for e in entries if e["action"] == "created" and e["resourceId"] == question["id"]
        )
        assert entry["after"] == question, door  # one representation, whatever the door
        actors[door] = entry["actor"]
    member = member_actor(author, author_key)
    assert actors["rest"] == actors["mcp"] == member
    assert actors["import"] == member_actor(owner, owner_key)
    assert actors["cli"] == {"type": "system", "id": "cli"}

    # Under review nothing is created live, whatever the door (MCP only ever drafts).
    assert (await require_review(org)).status_code == 200
    live = {
        door: await DOORS[door](ctx, creators[door], f"Live via {door}", "published")
        for door in ("rest", "import", "cli")
    }
    assert live == {door: ("refused", "review_required") for door in live}
    r = await org.get("/questions", query={"limit": 100, "status": "published"}, scope="read")
    assert [q["title"] for q in (await r.get_json())["data"]] == []
