"""The org's own outbox: events are written in the org's schema, in the transaction of the
change, so that transaction touches one schema (one Citus node).

Migrating an existing schema (``faq migrate``, online) moves the org's pending rows from
``shared.outbox`` here, in order, and marks the org in ``shared.outbox_pending``; provisioning
a new org (offline script) has nothing to move.

Revision ID: 0007
Revises: 0006
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)

_MOVE = sa.text(
    "WITH moved AS (DELETE FROM shared.outbox WHERE org_id = :org_id "
    "RETURNING id, event_id, event, data, created_at) "
    "INSERT INTO outbox (event_id, event, data, created_at) "
    "SELECT event_id, event, data, created_at FROM moved ORDER BY id"
)


def upgrade() -> None:
    op.create_table(
        "outbox",
        sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("event_id", sa.String(40), nullable=False, unique=True),
        sa.Column("event", sa.String(40), nullable=False),
        sa.Column("data", pg.JSONB, nullable=False),
        sa.Column("created_at", TS, nullable=False, server_default=sa.func.now()),
    )
    if context.is_offline_mode():
        return  # provisioning a new org: no events yet
    bind = op.get_bind()
    if bind.execute(sa.text("SELECT to_regclass('shared.outbox')")).scalar() is None:
        return
    org_id = bind.execute(
        sa.text("SELECT id FROM shared.organizations WHERE schema_name = current_schema()")
    ).scalar()
    if org_id is None:
        return
    moved = bind.execute(_MOVE, {"org_id": org_id}).rowcount
    if moved and bind.execute(sa.text("SELECT to_regclass('shared.outbox_pending')")).scalar():
        bind.execute(
            sa.text(
                "INSERT INTO shared.outbox_pending (org_id) VALUES (:org_id) ON CONFLICT DO NOTHING"
            ),
            {"org_id": org_id},
        )


def downgrade() -> None:
    op.drop_table("outbox")
