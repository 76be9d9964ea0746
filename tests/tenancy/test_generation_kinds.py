"""What a tenant statement does to the org's content generations (``statement_kind``): text
SQL that only locks or notifies writes nothing; any other text SQL may write anything."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from tenancy.generations import CHANGE, NO_WRITE, statement_kind


@pytest.mark.parametrize(
    "sql",
    [
        "LOCK TABLE outbox IN SHARE MODE",
        "lock table outbox in share row exclusive mode nowait;",
        "LOCK outbox",
        'LOCK TABLE "org_x".outbox, questions IN ACCESS EXCLUSIVE MODE',
        "SELECT pg_advisory_xact_lock(hashtextextended('x', 0))",
        "SELECT pg_notify('faq', 'x')",
    ],
)
def test_locks_and_notifies_write_nothing(sql: str) -> None:
    assert statement_kind(text(sql)) == NO_WRITE


@pytest.mark.parametrize(
    "sql",
    [
        "LOCK TABLE outbox IN SHARE MODE; DELETE FROM questions",
        "DELETE FROM questions",
        "UPDATE questions SET title = 'x'",
        "SELECT pg_notify('faq', 'x'); UPDATE questions SET title = 'x'",
        "SELECT reorder_questions()",
        "WITH d AS (DELETE FROM questions RETURNING id) SELECT pg_notify('x', 'y')",
    ],
)
def test_other_text_sql_may_change_anything(sql: str) -> None:
    assert statement_kind(text(sql)) == CHANGE
