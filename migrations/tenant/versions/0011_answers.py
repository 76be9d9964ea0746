"""Answers (issue 28): question embeddings (pgvector) and synonyms.

``question_embeddings``: one vector per question, locale and model, with the hash of the text
embedded (``api/answers/embedding_text.py``), written off the request path
(``tasks/embeddings.py``). The column is an untyped ``public.vector``, so vectors of any model
fit, and each common size has a partial HNSW index (cosine) on the vector cast to that size
(pgvector's way to index vectors of several dimensions in one table): a model change writes
the new model's rows beside the old ones (``model`` is in the key), then the backfill removes
the old ones. A size without an index here is searched exactly (``docs/answers.md``).

Only where pgvector is installed (shared revision 0009): the condition is inside one DO
statement so that a new org's schema, provisioned from this tree's offline SQL, gets the
same as a migrated one. Without pgvector no table is made and answers rank lexically. On
Citus the table is distributed beside ``questions`` (one shard, the org's node) explicitly:
Citus does that by itself only for a top-level CREATE TABLE.

Revision ID: 0011
Revises: 0010
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# WordLlama's 256; 384, 768 and 1024 (MiniLM, BGE, E5, Nomic); 512 and 1536 (OpenAI's
# text-embedding-3 shortened, text-embedding-3-small). HNSW indexes vectors up to 2,000.
INDEXED_DIMENSIONS = (256, 384, 512, 768, 1024, 1536)


def _index(dimensions: int) -> str:
    return (
        f"CREATE INDEX ix_question_embeddings_hnsw_{dimensions} ON question_embeddings "
        f"USING hnsw ((embedding::public.vector({dimensions})) public.vector_cosine_ops) "
        f"WHERE dimensions = {dimensions};"
    )


def upgrade() -> None:
    _synonyms_up()  # the lead's part (synonyms), at the end of this file: keep it
    indexes = "\n    ".join(_index(d) for d in INDEXED_DIMENSIONS)
    op.execute(
        f"""DO $$
BEGIN
  IF to_regtype('public.vector') IS NOT NULL THEN
    CREATE TABLE question_embeddings (
      question_id varchar(40) NOT NULL,
      locale varchar(35) NOT NULL,
      model varchar(200) NOT NULL,
      dimensions smallint NOT NULL,
      content_hash varchar(64) NOT NULL,
      embedding public.vector NOT NULL,
      updated_at timestamptz NOT NULL,
      CONSTRAINT pk_question_embeddings PRIMARY KEY (question_id, locale, model),
      CONSTRAINT ck_question_embeddings_dimensions
        CHECK (public.vector_dims(embedding) = dimensions)
    );
    -- Citus: distributed beside questions here (not done for a CREATE TABLE inside DO), so
    -- that the constraint and the indexes below reach its shard.
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
      PERFORM create_distributed_table('question_embeddings', NULL, colocate_with => 'questions');
    END IF;
    ALTER TABLE question_embeddings
      ADD CONSTRAINT fk_question_embeddings_question_id_questions
      FOREIGN KEY (question_id) REFERENCES questions (id) ON DELETE CASCADE;
    CREATE INDEX ix_question_embeddings_model ON question_embeddings (model);
    {indexes}
  END IF;
END $$"""
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS question_embeddings")
    _synonyms_down()


# The lead's part (synonyms): keep below, and the two calls above.
def _synonyms_up() -> None:
    # The org's synonym groups of one locale (``PUT /synonyms``): a JSON list of lists.
    op.create_table(
        "synonyms",
        sa.Column("locale", sa.String(35), primary_key=True),
        sa.Column("groups", JSONB, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def _synonyms_down() -> None:
    op.drop_table("synonyms")
