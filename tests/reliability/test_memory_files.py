"""One API process under the worst file a FREE org can ask for or send (issue 26): its peak
resident memory stays under ``RSS_CEILING_MB`` and a cheap request sent meanwhile is answered
within ``CHEAP_LATENCY_BOUND_MS`` (a loop blocked by parsing or serialising shows up there).

- XLIFF export: 200 questions (FREE's cap) with 100,000-character answers, and as many
  100,000-character translations into the second locale (FREE's cap: 2) as fit under the
  export's 32 Mi characters: about 134 MB of XLIFF, four-byte characters throughout.
- XLIFF import: a document of the largest body accepted (``FAQ_MAX_BODY_BYTES``, 1 MiB), as
  many units as fit, every question of the org among them.
- Audit export: 600 entries, each a question's answer changed from one 100,000-character text
  to another (about 800 kB each, 480 MB in all).
"""

from __future__ import annotations

import http.client
import json
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.translations.files import EXPORT_MAX_CHARS
from billing.plans import Plan
from tenancy.db import tenant_session
from tests.api.audit.test_export_bounds import seed_large_entries
from tests.api.translations.test_xliff_bounds import seed_questions, seed_translations
from tests.fixtures.bounded import (
    CHEAP_LATENCY_BOUND_MS,
    RSS_CEILING_MB,
    ApiProcess,
    Observation,
    api_process,
    fetch,
)
from tests.fixtures.orgs import OrgClient, make_org

pytestmark = pytest.mark.serial

DEFAULT_MAX_BODY = 1_048_576  # FAQ_MAX_BODY_BYTES's default (tenancy/settings.py)


@dataclass(frozen=True)
class Download:
    status: int
    size: int
    lines: int
    head: bytes
    tail: bytes


def download(url: str, headers: dict[str, str]) -> Download:
    """A GET read to the end in pieces and dropped as it arrives (the client holds nothing)."""
    request = urllib.request.Request(url, headers=headers)
    size = lines = 0
    head = tail = b""
    try:
        response = urllib.request.urlopen(request, timeout=300)
    except urllib.error.HTTPError as error:
        body = error.read()
        return Download(error.code, len(body), body.count(b"\n"), body[:4096], body[-64:])
    with response:
        while piece := response.read(1 << 20):
            size += len(piece)
            lines += piece.count(b"\n")
            head = head or piece[:4096]
            tail = (tail + piece)[-64:]
        return Download(response.status, size, lines, head, tail)


@pytest.fixture
def api() -> Iterator[ApiProcess]:
    with api_process() as process:
        yield process


async def free_org(engine: AsyncEngine, client: Any, *locales: str) -> OrgClient:
    org = await make_org(engine, client, Plan.FREE)
    if locales:
        r = await org.patch("/settings", json={"locales": ["en", *locales], "defaultLocale": "en"})
        assert r.status_code == 200, await r.get_json()
    return org


def report(what: str, seen: Observation) -> None:
    print(
        f"\n{what}: RSS {seen.before_rss_mb:.0f} -> peak {seen.peak_rss_mb:.0f} MB"
        f" (ceiling {RSS_CEILING_MB:.0f}); slowest cheap request {seen.cheap_max_ms:.0f} ms"
        f" of {seen.cheap_count} (bound {CHEAP_LATENCY_BOUND_MS:.0f})"
    )


def assert_bounded(what: str, seen: Observation) -> None:
    report(what, seen)
    assert seen.cheap_count > 0, what
    assert seen.peak_rss_mb < RSS_CEILING_MB, (what, seen)
    assert seen.cheap_max_ms < CHEAP_LATENCY_BOUND_MS, (what, seen)


async def _export_chars(engine: AsyncEngine, org: OrgClient, locale: str) -> int:
    """The characters of text an export into ``locale`` holds (what its cap counts)."""
    async with tenant_session(engine, org.info.schema_name) as session:
        total = await session.execute(
            text(
                "SELECT (SELECT coalesce(sum(char_length(q.title) + char_length(q.answer)"
                "   + coalesce(char_length(t.title) + char_length(t.answer), 0)), 0)"
                "   FROM questions q LEFT JOIN question_translations t"
                "   ON t.question_id = q.id AND t.locale = :l"
                "   WHERE q.deleted_at IS NULL AND q.locale <> :l)"
                " + (SELECT coalesce(sum(char_length(name) + coalesce(char_length(description),"
                "   0)), 0) FROM categories WHERE deleted_at IS NULL AND locale <> :l)"
            ),
            {"l": locale},
        )
        return int(total.scalar_one())


async def test_the_largest_xliff_export_of_a_free_org_is_bounded(
    engine: AsyncEngine, client: Any, api: ApiProcess
) -> None:
    org = await free_org(engine, client, "fr")
    schema = org.info.schema_name
    await seed_questions(engine, schema, prefix="q_big", count=200)
    await seed_translations(engine, schema, prefix="q_big", count=135, locale="fr")
    chars = await _export_chars(engine, org, "fr")
    assert EXPORT_MAX_CHARS - 100_100 < chars <= EXPORT_MAX_CHARS  # one more would not fit
    url = f"{api.base_url}/api/v1/{org.slug}/translations/export?locale=fr"
    auth = {"Authorization": f"Bearer {org.keys['read']}"}

    seen = api.observe(lambda: download(url, auth))
    got: Download = seen.result
    assert got.status == 200
    assert got.tail.endswith(b"</xliff>\n")
    assert got.size > 4 * (chars - 2_000_000)  # four bytes a character, and the markup
    assert_bounded(f"XLIFF export ({got.size / 1e6:.0f} MB)", seen)

    # One translation more and the export is over its cap: refused before anything streams.
    await seed_translations(engine, schema, prefix="q_big", skip=135, count=1, locale="fr")
    status, _headers, body = fetch(url, headers=auth)
    assert status == 413
    assert json.loads(body)["error"]["code"] == "export_too_large"


def _largest_import(question_ids: list[str], limit: int) -> bytes:
    """An XLIFF document of ``limit`` bytes: a translation of every question, then as many
    more (unknown) units as fit, then blank lines."""
    head = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">'
        b'<file original="faq-en" source-language="en" target-language="fr"'
        b' datatype="plaintext"><body>\n'
    )
    tail = b"</body></file></xliff>\n"
    units = []
    for qid in question_ids:
        for field in ("title", "answer"):
            units.append(
                f'<trans-unit id="question/{qid}/{field}"><source>s</source>'
                f"<target>Traduction {field}</target></trans-unit>\n".encode()
            )
    size = len(head) + len(tail) + sum(map(len, units))
    n = 0
    while True:
        unit = (
            f'<trans-unit id="question/q_{n:08d}/title"><source>s</source>'
            f"<target>t</target></trans-unit>\n"
        ).encode()
        if size + len(unit) > limit:
            break
        units.append(unit)
        size += len(unit)
        n += 1
    return head + b"".join(units) + tail + b"\n" * (limit - size)


async def test_the_largest_xliff_import_is_bounded(
    engine: AsyncEngine, client: Any, api: ApiProcess
) -> None:
    org = await free_org(engine, client, "fr")
    await seed_questions(
        engine, org.info.schema_name, prefix="q_imp", count=200, unit="a", repeat=20
    )
    ids = [f"q_imp{i:06d}" for i in range(1, 201)]
    body = _largest_import(ids, DEFAULT_MAX_BODY)
    assert len(body) == DEFAULT_MAX_BODY
    url = f"{api.base_url}/api/v1/{org.slug}/translations/import"
    headers = {"Authorization": f"Bearer {org.keys['write']}", "Content-Type": "application/xml"}

    seen = api.observe(lambda: fetch(url, method="POST", headers=headers, body=body))
    status, _headers, answer = seen.result
    assert status == 200, answer[:500]
    data = json.loads(answer)["data"]
    assert data["updated"] == 200
    assert {e["code"] for e in data["errors"]} == {"not_found"}
    assert_bounded(f"XLIFF import ({len(body)} bytes, {len(data['errors']) + 400} units)", seen)

    # A byte more is refused before it is parsed: with a length, and chunked.
    status, _headers, answer = fetch(url, method="POST", headers=headers, body=body + b" ")
    assert status == 413 and json.loads(answer)["error"]["code"] == "payload_too_large"
    host, port = api.base_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        connection.request(
            "POST",
            f"/api/v1/{org.slug}/translations/import",
            body=iter([body, b" "]),
            headers=headers,
            encode_chunked=True,
        )
        response = connection.getresponse()
        assert response.status == 413
        assert json.loads(response.read())["error"]["code"] == "payload_too_large"
    finally:
        connection.close()


async def test_the_largest_audit_export_is_bounded(
    engine: AsyncEngine, client: Any, api: ApiProcess
) -> None:
    org = await free_org(engine, client)
    count = 600
    await seed_large_entries(engine, org.info.schema_name, count=count)
    url = f"{api.base_url}/api/v1/{org.slug}/audit/export?resource=question"
    auth = {"Authorization": f"Bearer {org.keys['admin']}"}

    seen = api.observe(lambda: download(url, auth))
    got: Download = seen.result
    assert got.status == 200
    assert got.lines == count
    assert got.size > count * 800_000
    assert_bounded(f"audit export ({got.size / 1e6:.0f} MB)", seen)
