"""XLIFF files that cannot exhaust the process (issue 26): a document with a DOCTYPE is refused
before it is parsed, and the export streams in batches bounded by bytes, the same document
whatever the batches.

The seeding helpers (SQL, the way a FREE org fills its caps without thousands of requests) are
shared with ``tests/reliability/test_memory_files.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from quart import Quart
from sqlalchemy import TextClause, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncEngine
from werkzeug.datastructures import Headers

from api.translations import files
from api.translations.xliff import (
    STATE_FINAL,
    STATE_OUTDATED,
    STATE_TRANSLATED,
    ExportUnit,
    build_document,
)
from tenancy.db import tenant_session
from tenancy.transactions import commit
from tests.api.translations.test_xliff import enable_locales, import_file, translation_of
from tests.fixtures.orgs import OrgClient

EMOJI = "\U0001f600"  # four bytes of UTF-8, four of a Python string: the largest character

_QUESTIONS = """
INSERT INTO questions (id, slug, locale, title, answer, status, category_id, sort_order,
                       search_vector, created_at, updated_at)
SELECT :prefix || lpad(i::text, 6, '0'), :prefix || '-' || i, :locale, :title || ' ' || i,
       repeat(CAST(:unit AS text), :repeat), 'draft',
       :category, :order + i,
       ''::tsvector, now(), now()
FROM generate_series(1, :count) AS i
"""

# The digest of the source as api/translations/models.py computes it: a current translation.
_TRANSLATIONS = """
INSERT INTO question_translations (question_id, locale, title, answer, status, source_digest,
                                   search_vector, created_at, updated_at)
VALUES (:id, :locale, 'T ' || :title, repeat(CAST(:unit AS text), :repeat), :status,
        CASE WHEN :stale THEN 'stale'
             ELSE md5(coalesce(:title, '') || chr(1) || coalesce(:answer, '')) END,
        ''::tsvector, now(), now())
"""
# (one row per question, not an INSERT ... SELECT: Citus 13.2 deparses that one into invalid
# SQL, "( IS NOT NULL)", for a table of a distributed schema)
_SOURCES = """
SELECT id, title, answer FROM questions WHERE id LIKE :prefix || '%' ORDER BY id
OFFSET :skip LIMIT :count
"""


def literal(sql: str, **params: Any) -> TextClause:
    """Test data made by PostgreSQL from values written into the statement: Citus cannot
    deparse some bound parameters of an INSERT ... SELECT it plans on the coordinator."""
    compiled = (
        text(sql)
        .bindparams(**params)
        .compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True})
    )
    return text(str(compiled).replace(":", "\\:"))


async def seed_questions(
    engine: AsyncEngine,
    schema: str,
    *,
    prefix: str,
    count: int,
    unit: str = EMOJI,
    repeat: int = 100_000,
    locale: str = "en",
    title: str = "Question",
    order: int = 0,
) -> None:
    """``count`` questions in the default category, answers of ``unit`` x ``repeat``, ids
    ``{prefix}000001``..., sort orders ``order + 1``..., made by PostgreSQL itself."""
    async with tenant_session(engine, schema) as session:
        # (the default category read first: Citus cannot plan it as a subquery of an
        # INSERT ... SELECT from a function)
        category = await session.scalar(
            text("SELECT id FROM categories WHERE is_default AND deleted_at IS NULL")
        )
        await session.execute(
            literal(
                _QUESTIONS,
                category=category,
                prefix=prefix,
                count=count,
                unit=unit,
                repeat=repeat,
                locale=locale,
                title=title,
                order=order,
            )
        )
        await commit(session)


async def seed_translations(
    engine: AsyncEngine,
    schema: str,
    *,
    prefix: str,
    count: int,
    locale: str,
    unit: str = EMOJI,
    repeat: int = 100_000,
    status: str = "draft",
    stale: bool = False,
    skip: int = 0,
) -> None:
    """Translations into ``locale`` of ``count`` questions whose id starts with ``prefix``,
    in id order past the first ``skip`` (``stale``: written for another source, outdated)."""
    async with tenant_session(engine, schema) as session:
        sources = await session.execute(
            text(_SOURCES), {"prefix": prefix, "skip": skip, "count": count}
        )
        common = {"locale": locale, "unit": unit, "repeat": repeat, "status": status}
        await session.execute(
            text(_TRANSLATIONS),
            [{**common, "stale": stale, **row._asdict()} for row in sources],
        )
        await commit(session)


async def body_chunks(
    app: Quart, path: str, headers: dict[str, str], query: dict[str, str] | None = None
) -> tuple[int, Headers, list[bytes]]:
    """One GET through the app, its body as the pieces the app sent (a streamed body arrives
    in several; a body built in memory in one)."""
    async with app.test_client().request(
        path, method="GET", headers=headers, query_string=query
    ) as connection:
        await connection.send_complete()
        chunks: list[bytes] = []
        while chunk := await connection.receive():
            chunks.append(chunk)
    assert connection.status_code is not None and connection.headers is not None
    return connection.status_code, connection.headers, chunks


# ---- a DOCTYPE is refused before parsing ---------------------------------------------------


def _unit_file(doctype: str, target: str, unit_id: str) -> bytes:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
{doctype}
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
<file original="faq-en" source-language="en" target-language="fr" datatype="plaintext"><body>
<trans-unit id="{unit_id}/title"><source>s</source><target>Titre</target></trans-unit>
<trans-unit id="{unit_id}/answer"><source>s</source><target>{target}</target></trans-unit>
</body></file></xliff>""".encode()


def _hostile_files(unit_id: str) -> dict[str, bytes]:
    nested = "".join(
        f'<!ENTITY e{n} "{f"&e{n - 1};" * 10}">' for n in range(1, 10)
    )  # 10^9 copies of e0 once expanded
    return {
        "internal entity": _unit_file(
            f'<!DOCTYPE xliff [<!ENTITY a "{"a" * 100}"><!ENTITY b "{"&a;" * 10}">'
            f'<!ENTITY c "{"&b;" * 10}"><!ENTITY d "{"&c;" * 10}">]>',
            "&d;",  # 100,000 characters from a 600-byte body
            unit_id,
        ),
        "billion laughs": _unit_file(
            f'<!DOCTYPE xliff [<!ENTITY e0 "lol">{nested}]>', "&e9;", unit_id
        ),
        "external entity": _unit_file(
            '<!DOCTYPE xliff [<!ENTITY x SYSTEM "file:///etc/passwd">]>', "&x;", unit_id
        ),
        "plain doctype": _unit_file("<!DOCTYPE xliff>", "Réponse", unit_id),
        "external dtd": _unit_file(
            '<!DOCTYPE xliff PUBLIC "-//XLIFF//DTD XLIFF//EN" "http://127.0.0.1:9/xliff.dtd">',
            "Réponse",
            unit_id,
        ),
    }


async def test_a_document_with_a_doctype_is_refused_and_changes_nothing(
    app: Quart, engine: AsyncEngine, org: OrgClient
) -> None:
    await enable_locales(app, engine, org, "fr")
    category = (await (await org.get("/categories")).get_json())["data"][0]
    r = await org.post(
        "/questions",
        json={"title": "Q", "answer": "A", "categoryId": category["id"], "status": "draft"},
    )
    question = (await r.get_json())["data"]
    for name, body in _hostile_files(f"question/{question['id']}").items():
        r = await import_file(org, body)
        assert r.status_code == 400, (name, await r.get_data())
        error = (await r.get_json())["error"]
        assert error["code"] == "validation_failed", name
        assert [d["field"] for d in error["details"]] == ["body"], name
        assert "DOCTYPE" in error["details"][0]["issue"], (name, error)
        assert await translation_of(org, engine, "question", question["id"], "fr") is None, name
    # The same file without its DOCTYPE is written: the refusal was the DOCTYPE's.
    r = await import_file(org, _unit_file("", "Réponse", f"question/{question['id']}"))
    assert (await r.get_json())["data"]["updated"] == 1


# ---- the export streams in batches bounded by bytes ----------------------------------------


async def _expected_document(engine: AsyncEngine, org: OrgClient, locale: str) -> bytes:
    """The document as the export built it in one piece before it streamed: every category,
    then every question, each in (sort order, id) order, into one ``<file>`` per source
    locale (``build_document``)."""
    units: list[tuple[str, ExportUnit]] = []

    def state(status: str | None, digest: str | None, current: str) -> str:
        if digest != current:
            return STATE_OUTDATED
        return STATE_FINAL if status == "published" else STATE_TRANSLATED

    async with tenant_session(engine, org.info.schema_name) as session:
        categories = await session.execute(
            text(
                "SELECT c.id, c.slug, c.locale, c.name, c.description, t.name AS t_name,"
                " t.description AS t_description, t.source_digest,"
                " md5(coalesce(c.name, '') || chr(1) || coalesce(c.description, '')) AS current"
                " FROM categories c LEFT JOIN category_translations t"
                " ON t.category_id = c.id AND t.locale = :locale"
                " WHERE c.deleted_at IS NULL AND c.locale <> :locale ORDER BY c.sort_order, c.id"
            ),
            {"locale": locale},
        )
        for c in categories:
            translated = c.t_name is not None
            st = state(None, c.source_digest, c.current) if translated else None
            note = f"category {c.slug}"
            units.append(
                (c.locale, ExportUnit("category", c.id, "name", c.name, c.t_name, st, note))
            )
            if c.description is not None:
                target = c.t_description if translated else None
                units.append(
                    (
                        c.locale,
                        ExportUnit(
                            "category", c.id, "description", c.description, target, st, note
                        ),
                    )
                )
        questions = await session.execute(
            text(
                "SELECT q.id, q.slug, q.locale, q.title, q.answer, t.title AS t_title,"
                " t.answer AS t_answer, t.status, t.source_digest,"
                " md5(coalesce(q.title, '') || chr(1) || coalesce(q.answer, '')) AS current"
                " FROM questions q LEFT JOIN question_translations t"
                " ON t.question_id = q.id AND t.locale = :locale"
                " WHERE q.deleted_at IS NULL AND q.locale <> :locale ORDER BY q.sort_order, q.id"
            ),
            {"locale": locale},
        )
        for q in questions:
            st = state(q.status, q.source_digest, q.current) if q.t_title is not None else None
            note = f"question {q.slug}"
            for name, source, target in (
                ("title", q.title, q.t_title),
                ("answer", q.answer, q.t_answer),
            ):
                units.append(
                    (q.locale, ExportUnit("question", q.id, name, source, target, st, note))
                )
    return build_document(locale, "en", units)  # the org's default locale


async def _seed_two_source_locales(app: Quart, engine: AsyncEngine, org: OrgClient) -> None:
    """Categories and questions in `de` and `en` (a `de` category first, so `de` is the first
    `<file>`), large answers in both, translations into `fr` in every state."""
    await enable_locales(app, engine, org, "fr", "de")
    schema = org.info.schema_name
    async with tenant_session(engine, schema) as session:
        await session.execute(
            text(
                "INSERT INTO categories (id, slug, name, description, locale, sort_order,"
                " search_vector, created_at, updated_at) VALUES"
                " ('cat_de', 'allgemein', 'Allgemein <&>', 'Alles \"Übrige\"\n  hier', 'de', -1,"
                "  ''::tsvector, now(), now()),"
                " ('cat_en', 'billing', 'Billing', NULL, 'en', 5, ''::tsvector, now(), now())"
            )
        )
        await session.execute(
            text(
                "INSERT INTO category_translations (category_id, locale, name, description,"
                " source_digest, search_vector, created_at, updated_at) VALUES"
                " ('cat_de', 'fr', 'Général', NULL, 'stale', ''::tsvector, now(), now())"
            )
        )
        await commit(session)
    # Interleaved sort orders: the two locales' questions alternate in the export's order.
    await seed_questions(engine, schema, prefix="q_en", count=6, locale="en", order=0)
    await seed_questions(engine, schema, prefix="q_de", count=5, locale="de", order=0)
    await seed_questions(
        engine, schema, prefix="q_sm", count=40, locale="en", unit="<a & b>\n", repeat=3, order=2
    )
    await seed_translations(engine, schema, prefix="q_en", count=2, locale="fr")
    await seed_translations(engine, schema, prefix="q_de", count=2, locale="fr", status="published")
    await seed_translations(engine, schema, prefix="q_sm", count=5, locale="fr", stale=True)


async def test_the_export_streams_in_byte_bounded_chunks_the_same_document(
    app: Quart, engine: AsyncEngine, org: OrgClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _seed_two_source_locales(app, engine, org)
    path = f"/api/v1/{org.slug}/translations/export"
    status, headers, chunks = await body_chunks(app, path, org.headers("read"), {"locale": "fr"})
    assert status == 200
    assert headers["Content-Type"].startswith("application/xliff+xml")
    expected = await _expected_document(engine, org, "fr")
    assert len(expected) > 2 * files.EXPORT_BATCH_BYTES  # 11 answers of 400 kB, 4 targets
    assert b"".join(chunks) == expected
    # Streamed: no piece holds more than a batch's text, plus the batch's last row (here a
    # question and its translation: 800 kB) and the markup around them.
    assert len(chunks) > 3
    assert max(len(chunk) for chunk in chunks) <= files.EXPORT_BATCH_BYTES + 2**20

    # Whatever the batches, the same document.
    bounds: list[tuple[int, int]] = [(1, 1), (3, 10**9), (10**9, 7)]  # (rows, bytes) per batch
    for rows, size in bounds:
        monkeypatch.setattr(files, "EXPORT_BATCH_ROWS", rows)
        monkeypatch.setattr(files, "EXPORT_BATCH_BYTES", size)
        status, _headers, chunks = await body_chunks(
            app, path, org.headers("read"), {"locale": "fr"}
        )
        assert status == 200
        assert b"".join(chunks) == expected, (rows, size)


def test_the_streamed_pieces_are_the_one_piece_document() -> None:
    """``xliff.frame`` and ``xliff.units_xml`` (the pieces the export streams) put together
    are ``build_document``'s bytes: files in order of first appearance, each file's units in
    order, the first file's attributes in the skeleton's order."""
    from api.translations.xliff import frame, units_xml

    def unit(n: int, target: str | None = None, state: str | None = None) -> ExportUnit:
        return ExportUnit(
            "question", f"q_{n}", "answer", f"source {n} <&>\n  x", target, state, "n"
        )

    placed = [
        ("de", unit(1)),
        ("en", unit(2, "t", STATE_FINAL)),
        ("de", unit(3, "u\n", STATE_OUTDATED)),
        ("it", unit(4, "", STATE_TRANSLATED)),
        ("en", unit(5)),
    ]
    locales = list(dict.fromkeys(locale for locale, _ in placed))
    pieces = frame("fr", locales)
    assert len(pieces) == len(locales) + 1
    streamed = pieces[0]
    for i, locale in enumerate(locales):
        mine = [u for loc, u in placed if loc == locale]
        # In batches of one and of all: the same bytes.
        assert units_xml("fr", mine) == b"".join(units_xml("fr", [u]) for u in mine)
        streamed += units_xml("fr", mine) + pieces[i + 1]
    assert streamed == build_document("fr", "en", placed)
