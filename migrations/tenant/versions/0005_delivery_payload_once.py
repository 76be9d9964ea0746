"""Each delivery stores its event data once: ``payload`` (a second copy of ``data`` with the
delivery id, event and signing time) gives way to ``sent_at``, the time the body last sent (or
to be sent) was signed; the public ``payload`` is derived from ``data`` and ``sent_at``.

Revision ID: 0005
Revises: 0004
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("deliveries", sa.Column("sent_at", TS))
    op.execute(
        "UPDATE deliveries SET sent_at = "
        "COALESCE(CAST(payload ->> 'timestamp' AS timestamptz), created_at)"
    )
    op.alter_column("deliveries", "sent_at", nullable=False)
    op.drop_column("deliveries", "payload")


def downgrade() -> None:
    op.add_column("deliveries", sa.Column("payload", pg.JSONB))
    op.execute(
        "UPDATE deliveries SET payload = jsonb_build_object('id', id, 'event', event, "
        "'data', data, 'timestamp', "
        "to_char(sent_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))"
    )
    op.drop_column("deliveries", "sent_at")
