"""Answers (issue 28): the pgvector extension where the server has it.

Created in schema ``public`` (tenant tables name its type ``public.vector``: the role's
search_path does not include ``public``). Where the server does not ship pgvector, or the
role may not create it (pgvector is not a trusted extension: a managed service's
administrator or a superuser creates it), nothing is created and the service runs lexical
only (``api/answers/semantic.py`` says so once in the log and in ``GET /readyz``). On Citus
this runs on the coordinator, which creates the extension on every worker too.

Revision ID: 0009
Revises: 0008
"""

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("alembic.runtime.migration")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")).first():
        return
    if not bind.execute(
        sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    ).first():
        log.warning("pgvector is not available on this server: answers rank lexically only")
        return
    try:
        with bind.begin_nested():
            bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public"))
    except sa.exc.DBAPIError as exc:
        log.warning("pgvector could not be created (%s): answers rank lexically only", exc.orig)


def downgrade() -> None:
    # The extension stays: other databases' objects or an administrator may rely on it, and
    # it is ops' to drop (DROP EXTENSION vector) once no tenant table uses it.
    pass
