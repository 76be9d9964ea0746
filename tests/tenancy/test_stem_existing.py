"""`faq migrate` stems the search index of content written before stemming per language
(tenant migration 0008): an old French question is found by a stem its words alone miss."""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.clock import utcnow
from tenancy.ids import new_id
from tenancy.schemas import MIGRATIONS_DIR, upgrade_tenant_schema, version_tree_at

STEM_MIGRATION = "0008_stem_existing_content.py"
# A word whose stem is not a prefix of it: `chevaux` stems to `cheval` in French.
MATCHES = "SELECT search_vector @@ to_tsquery('french', 'cheval') FROM questions WHERE id = :id"


async def test_migrate_stems_the_words_of_existing_questions(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    old_tree_dir = tmp_path / "tenant"
    shutil.copytree(MIGRATIONS_DIR / "tenant", old_tree_dir)
    for version in (old_tree_dir / "versions").glob("*.py"):
        if version.name >= STEM_MIGRATION:
            version.unlink()
    schema = "t_" + new_id("org").split("_", 1)[1].lower()
    async with engine.begin() as conn:
        await upgrade_tenant_schema(conn, schema, version_tree_at(old_tree_dir))
    now, question, english = utcnow(), new_id("q"), new_id("q")
    async with engine.begin() as conn:
        await conn.execute(text(f'SET LOCAL search_path TO "{schema}"'))
        await conn.execute(
            text(
                "INSERT INTO categories (id, slug, name, locale, sort_order, is_default,"
                " search_vector, created_at, updated_at) VALUES ('cat_1', 'general', 'General',"
                " 'fr', 0, true, setweight(to_tsvector('simple', 'general'), 'A'), :n, :n)"
            ),
            {"n": now},
        )
        # Rows as the code before stemming indexed them: the folded words only.
        for qid, locale, title in ((question, "fr", "les chevaux"), (english, "en", "chevaux")):
            await conn.execute(
                text(
                    "INSERT INTO questions (id, slug, locale, title, answer, status, category_id,"
                    " search_vector, created_at, updated_at) VALUES (:id, :id, :locale,"
                    " CAST(:t AS text), 'au pre', 'published', 'cat_1',"
                    " setweight(to_tsvector('simple', CAST(:t AS text)), 'A')"
                    " || setweight(to_tsvector('simple', 'au pre'), 'B'), :n, :n)"
                ),
                {"id": qid, "locale": locale, "t": title, "n": now},
            )
        assert (await conn.execute(text(MATCHES), {"id": question})).scalar_one() is False
    try:
        async with engine.begin() as conn:
            applied = await upgrade_tenant_schema(conn, schema)
            assert STEM_MIGRATION.split("_")[0] in applied
        async with engine.begin() as conn:
            await conn.execute(text(f'SET LOCAL search_path TO "{schema}"'))
            assert (await conn.execute(text(MATCHES), {"id": question})).scalar_one() is True
            # English is stemmed in English: the French stem is not added to it.
            assert (await conn.execute(text(MATCHES), {"id": english})).scalar_one() is False
            # The words as written still match, and the stems keep the weights (title A).
            for query, expected in (
                ("to_tsquery('simple', 'chevaux:A')", True),
                ("to_tsquery('french', 'cheval:A')", True),
                ("to_tsquery('french', 'cheval:B')", False),
                ("to_tsquery('simple', 'pre:B')", True),
            ):
                matched = (
                    await conn.execute(
                        text(f"SELECT search_vector @@ {query} FROM questions WHERE id = :id"),
                        {"id": question},
                    )
                ).scalar_one()
                assert matched is expected, query
    finally:
        async with engine.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
