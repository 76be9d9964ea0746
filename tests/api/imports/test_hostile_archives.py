"""Untrusted bytes (issue 42): an archive or front matter made to cost far more than its size
is a 400 naming what was refused, found while inflating or before parsing, and changes
nothing. Each case failed before: the bzip2 member inflated a GiB in one call, the blank lines
took a Python step each, aliases repeated a node without its bytes; an article body of only a
comment failed a whole Zendesk job with 200 articles written."""

from __future__ import annotations

import io
import time
import zipfile
from typing import Any

import orjson
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.imports.archive import MAX_MEMBER_RATIO, MAX_MEMBERS, RATIO_SLACK
from billing.plans import Plan, import_inflated_bytes
from tests.api.imports.helpers import all_questions, count_rows, run, upload
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient

MANIFEST = orjson.dumps({"format": "faq-export", "version": 1})


def archive(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method, compresslevel=9) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


async def refused(org: OrgClient, fmt: str, body: bytes) -> str:
    """The 400's message, after checking nothing was made."""
    before = await all_questions(org)
    started = time.monotonic()
    r = await upload(org, fmt, body)
    took = time.monotonic() - started
    assert r.status_code == 400, (r.status_code, await r.get_data())
    error = (await r.get_json())["error"]
    assert error["code"] == "validation_failed", error
    assert took < 10, took  # not a bound on speed: the work stopped early (it took 11-15 s)
    assert await all_questions(org) == before
    return " ".join([error["message"], *(d["issue"] for d in error.get("details", []))])


async def test_a_bzip2_member_is_refused_before_it_inflates(org: OrgClient) -> None:
    # The report's upload: bzip2 inflates a whole block per call, whatever is asked for.
    lines = b" " * (8 * 2**20) + b"\n{not json"
    body = archive({"manifest.json": MANIFEST, "questions.ndjson": lines}, zipfile.ZIP_BZIP2)
    assert len(body) < 10_000
    message = await refused(org, "faq", body)
    assert "compression method 12" in message and "stored and deflate" in message


async def test_lzma_is_refused_too(org: OrgClient) -> None:
    body = archive({"manifest.json": MANIFEST}, zipfile.ZIP_LZMA)
    assert "compression method 14" in await refused(org, "faq", body)


async def test_a_member_of_blank_lines_stops_at_its_ratio(org: OrgClient) -> None:
    blank = b"\n" * (16 * 2**20)  # 16 MiB from about 16 KiB
    body = archive({"manifest.json": MANIFEST, "questions.ndjson": blank + b"{bad"})
    assert len(body) * MAX_MEMBER_RATIO + RATIO_SLACK < len(blank)
    message = await refused(org, "faq", body)
    assert f"questions.ndjson: inflates to more than {MAX_MEMBER_RATIO} times" in message


async def test_blank_lines_within_the_ratio_are_skipped_and_numbered(
    org: OrgClient, engine: AsyncEngine
) -> None:
    lines = b"\n \n".join(
        orjson.dumps({"id": f"q{i}", "title": f"Question {i}?", "answer": "Yes."}) for i in range(3)
    )
    body = archive({"manifest.json": MANIFEST, "questions.ndjson": b"\n\n" + lines + b"\n\n"})
    job = await run(engine, org, "faq", body)
    assert job["status"] == "succeeded", job
    assert sorted(q["title"] for q in await all_questions(org)) == [
        "Question 0?",
        "Question 1?",
        "Question 2?",
    ]
    bad = archive({"manifest.json": MANIFEST, "questions.ndjson": lines + b"\n\n\n{bad"})
    assert "questions.ndjson line 8: invalid JSON" in await refused(org, "faq", bad)


async def test_the_archive_total_stops_at_the_plans_limit(org_factory: OrgFactory) -> None:
    org = await org_factory(Plan.FREE)
    limit = import_inflated_bytes(Plan.FREE)
    one = b"a" * (RATIO_SLACK - 1)  # each file within its ratio (the slack), many together
    files = {f"f{i:04}.md": one for i in range(limit // len(one) + 2)}
    body = archive(files)
    assert len(body) < 2**20
    message = await refused(org, "markdown", body)
    assert f"inflates to more than {limit} bytes" in message


async def test_too_many_members_are_refused_before_the_directory_is_read(
    org_factory: OrgFactory,
) -> None:
    org = await org_factory(Plan.PRO)
    body = archive({f"{i}.md": b"" for i in range(MAX_MEMBERS + 1)}, zipfile.ZIP_STORED)
    assert f"more than {MAX_MEMBERS} files" in await refused(org, "markdown", body)


def nested_aliases(depth: int) -> bytes:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for level in range(1, depth + 1):
        items = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{items}]")
    lines.append(f"title: *a{depth}")
    return ("---\n" + "\n".join(lines) + "\n---\nBody.\n").encode()


async def test_yaml_aliases_are_refused_with_their_line(org: OrgClient) -> None:
    body = archive({"bomb.md": nested_aliases(8), "zz-bad.md": b"---\ntitle: [\n---\n"})
    assert len(body) < 2_000
    message = await refused(org, "markdown", body)
    assert "bomb.md line 3, column" in message and "aliases" in message


@pytest.mark.parametrize(
    "front",
    ["title: [a, b]", "category:\n  name: x", "slug: {a: 1}"],
)
async def test_a_list_where_one_value_is_expected_is_refused(org: OrgClient, front: str) -> None:
    body = archive({"q.md": f"---\n{front}\n---\nBody.\n".encode()})
    message = await refused(org, "markdown", body)
    assert "q.md: front matter" in message and "must be one value" in message


async def test_a_yaml_syntax_error_names_the_files_line_and_column(org: OrgClient) -> None:
    body = archive({"docs/q.md": b"---\ntitle: ok\nstatus: : draft\n---\nBody.\n"})
    message = await refused(org, "markdown", body)
    assert "docs/q.md line 3, column 9" in message, message


async def test_a_normal_markdown_archive_still_imports(org: OrgClient, engine: AsyncEngine) -> None:
    body = archive({"billing/refunds.md": b"---\ntitle: How do refunds work?\n---\nAsk us.\n"})
    job: dict[str, Any] = await run(engine, org, "markdown", body)
    assert job["status"] == "succeeded", job
    assert [q["title"] for q in await all_questions(org)] == ["How do refunds work?"]
    assert await count_rows(engine, org, "questions") == 1


def zendesk(bodies: list[str]) -> bytes:
    articles = [
        {"id": 1000 + i, "title": f"Article {i}", "body": body, "locale": "en-us"}
        for i, body in enumerate(bodies)
    ]
    return orjson.dumps({"articles": articles})


async def test_a_body_of_only_a_comment_stays_with_its_article(
    org_factory: OrgFactory, engine: AsyncEngine
) -> None:
    org = await org_factory(Plan.PRO)
    bodies = [f"<p>Answer {i}.</p>" for i in range(231)]
    bodies[220] = "<!-- c -->"
    bodies[221] = '<?xml version="1.0" encoding="utf-8"?><p>Declared.</p>'
    job = await run(engine, org, "zendesk", zendesk(bodies))
    assert job["status"] == "succeeded", job
    counts = job["counts"]
    assert counts["created"] + counts["failed"] == 231 and counts["created"] >= 230, job
    failed = {e["item"] for e in job["errors"]}
    assert failed <= {"zendesk:1220"}, job["errors"]
    titles = {q["title"]: q for q in await all_questions_of(org)}
    assert "Article 230" in titles and "Article 221" in titles
    assert titles["Article 221"]["answer"] == "Declared."


async def all_questions_of(org: OrgClient) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        query: dict[str, Any] = {"limit": 100, **({"cursor": cursor} if cursor else {})}
        r = await org.get("/questions", query=query)
        assert r.status_code == 200
        body = await r.get_json()
        found.extend(body["data"])
        cursor = body["meta"]["pagination"]["cursor"]
        if cursor is None:
            return found


async def test_a_json_item_is_bounded_while_it_streams(org: OrgClient) -> None:
    """The report's Zendesk file held one article of 2.7 million ``[]`` (5.6 s, 28 times the
    upload in memory): the item stops at its bound, named by its place and id."""
    hostile = {"id": 1001, "title": "Nested", "body": "<p>x</p>", "labels": [[]] * 20_000}
    body = orjson.dumps({"articles": [{"id": 1000, "title": "Fine", "body": "<p>y</p>"}, hostile]})
    message = await refused(org, "zendesk", body)
    assert "articles[1] (id 1001): more than 10000 JSON values" in message, message


async def test_a_json_syntax_error_names_its_line_column_and_article(org: OrgClient) -> None:
    """The report: a malformed Zendesk file was "invalid JSON near byte 435"; a person needs
    the line and the article."""
    fine = b'{"id": 7, "title": "Fine", "body": "<p>x</p>"},\n' * 400
    body = b'{"articles": [\n' + fine + b'{"id": 99, "title": "Broken" "body": ""}]}'
    message = await refused(org, "zendesk", body)
    # The column where the parser stopped: the end of the unexpected token ("body").
    assert "invalid JSON at line 402, column 35, in articles[400] (id 99)" in message, message
    message = await refused(org, "zendesk", b'{"articles": [{"id": 1, "title": "x",')
    assert "line 1, column 38, in articles[0] (id 1): premature EOF" in message, message


async def test_json_nested_two_million_deep_is_refused_at_once(org: OrgClient) -> None:
    """Found by ``tests/reliability/test_hostile_uploads.py``: 2 MB of ``[`` made ijson build
    a prefix per level of every length (24 GB, then the kernel killed the process)."""
    message = await refused(org, "zendesk", b'{"articles": [' + b"[" * 2_000_000 + b"]}")
    assert "JSON nested deeper than 64 levels" in message, message
    long_key = b'{"articles": [{"' + b"k" * 100_000 + b'": 1}]}'
    assert "a JSON key longer than 256 characters" in await refused(org, "intercom", long_key)


async def test_a_wrapped_list_is_bounded_per_item_not_in_all(org: OrgClient) -> None:
    """Intercom's ``{"type": "list", "data": [...]}`` holds many items under one wrapper: the
    per-item bound counts each article alone (a first version counted the wrapper whole)."""
    articles = [
        {"id": str(i), "title": f"T{i}", "body": "<p>x</p>", "tags": list(range(20))}
        for i in range(600)  # 600 x 27 values
    ]
    wrapped = {"articles": {"type": "list", "data": articles}}
    r = await upload(org, "intercom", orjson.dumps(wrapped))
    assert r.status_code == 202, await r.get_json()
