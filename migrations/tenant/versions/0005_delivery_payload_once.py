"""Each delivery stores its event data once: ``payload`` (a second copy of ``data`` with the
delivery id, event and signing time) gives way to ``sent_at``, the time the body last sent (or
to be sent) was signed; the public ``payload`` is derived from ``data`` and ``sent_at``.

Revision ID: 0005
Revises: 0004
"""

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import postgresql as pg

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TS = sa.DateTime(timezone=True)


BATCH = 1_000  # deliveries per read and per UPDATE


def _signed_at(timestamp: str | None, created_at: datetime) -> datetime:
    if timestamp:
        try:
            return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
        except ValueError:
            pass
    return created_at


def _fill_sent_at() -> None:
    """``sent_at`` from the old payload's signing time, else ``created_at``: read and written
    in batches, the time parsed in Python. Citus refuses ``CAST(text AS timestamptz)`` (STABLE)
    on a column, and any non-IMMUTABLE function in a COALESCE, in a distributed UPDATE (issue
    27); a new schema (offline: provisioning) has no rows."""
    if context.is_offline_mode():
        return
    bind = op.get_bind()
    read = sa.text(
        "SELECT id, payload ->> 'timestamp' AS ts, created_at FROM deliveries"
        " WHERE sent_at IS NULL AND id > :after ORDER BY id LIMIT :n"
    )
    write = sa.text("UPDATE deliveries SET sent_at = :sent_at WHERE id = :id")
    after = ""
    while rows := bind.execute(read, {"after": after, "n": BATCH}).all():
        bind.execute(write, [{"id": r.id, "sent_at": _signed_at(r.ts, r.created_at)} for r in rows])
        after = rows[-1].id


def upgrade() -> None:
    op.add_column("deliveries", sa.Column("sent_at", TS))
    _fill_sent_at()
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
