"""`faq migrate` stems the search index of content written in Arabic script before issue 38
(tenant migration 0017): an old Arabic question is found by the stem its folded words alone
miss ("الأموال" and "أموالي" share "mwl"), with the stems at the text's own weight; the
migration's copy of the stemming agrees with ``api.search.script_stems``."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.search import script_stems, searchable
from tenancy.clock import utcnow
from tenancy.ids import new_id
from tenancy.schemas import MIGRATIONS_DIR, upgrade_tenant_schema, version_tree_at

STEM_MIGRATION = "0017_stem_scripts.py"
TITLE = "كيف يمكنني استرداد أموالي؟"  # "my money": أموالي, folded "mwly", stem "mwl"
ANSWER = "تتم إعادة الأموال خلال ثلاثين يوما."
MATCHES = "SELECT search_vector @@ to_tsquery('simple', :q) FROM questions WHERE id = :id"


def test_the_migrations_stems_are_the_services() -> None:
    spec = importlib.util.spec_from_file_location(
        "stem_scripts", MIGRATIONS_DIR / "tenant" / "versions" / STEM_MIGRATION
    )
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    for sample in (TITLE, ANSWER, "Ποιος είναι ο κωδικός μου;", "English only", ""):  # noqa: RUF001
        assert migration.script_stems(sample) == " ".join(script_stems(sample)), sample
    assert "mwl" in migration.script_stems(TITLE).split()


async def test_migrate_stems_the_arabic_words_of_existing_questions(
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
    now, question = utcnow(), new_id("q")
    folded_title = " ".join(w for w in searchable(TITLE).split() if w not in script_stems(TITLE))
    async with engine.begin() as conn:
        await conn.execute(text(f'SET LOCAL search_path TO "{schema}"'))
        await conn.execute(
            text(
                "INSERT INTO categories (id, slug, name, locale, sort_order, is_default,"
                " search_vector, created_at, updated_at) VALUES ('cat_1', 'general', 'عام',"
                " 'ar', 0, true, setweight(to_tsvector('simple', 'm'), 'A'), :n, :n)"
            ),
            {"n": now},
        )
        # As the code before issue 38 indexed it: the folded words only.
        await conn.execute(
            text(
                "INSERT INTO questions (id, slug, locale, title, answer, status, category_id,"
                " search_vector, created_at, updated_at) VALUES (:id, :id, 'ar', :t, :a,"
                " 'published', 'cat_1', setweight(to_tsvector('simple', CAST(:w AS text)), 'A'),"
                " :n, :n)"
            ),
            {"id": question, "t": TITLE, "a": ANSWER, "w": folded_title, "n": now},
        )
        assert (
            await conn.execute(text(MATCHES), {"id": question, "q": "mwl"})
        ).scalar_one() is False
    try:
        async with engine.begin() as conn:
            applied = await upgrade_tenant_schema(conn, schema)
            assert STEM_MIGRATION.split("_")[0] in applied
        async with engine.begin() as conn:
            await conn.execute(text(f'SET LOCAL search_path TO "{schema}"'))
            for query, expected in (("mwl:A", True), ("mwly:A", True), ("mwl:B", False)):
                found = await conn.execute(text(MATCHES), {"id": question, "q": query})
                assert found.scalar_one() is expected, query
    finally:
        async with engine.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
