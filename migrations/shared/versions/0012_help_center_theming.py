"""Help center theming (issue 32): nothing in the shared schema. The theming settings live in
``organizations.help_center`` (jsonb, since 0008) and the logo's bytes in each org's schema
(tenant revision 0014); this revision keeps the two trees' numbering as planned.

Revision ID: 0012
Revises: 0011
"""

from collections.abc import Sequence

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
