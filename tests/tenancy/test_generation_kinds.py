"""What a tenant statement does to the org's content generations (``statement_kind``): text
SQL that only locks, notifies or writes one declared table that holds no content writes
nothing versioned; any other text SQL may write anything."""

from __future__ import annotations

import pytest
from sqlalchemy import text

import api.questions.models  # noqa: F401  (the content tables, declared)
import tasks.deliveries.store  # noqa: F401  (the deliveries table, declared)
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
        # One write of a declared table that holds no content (a delivery's bookkeeping).
        "UPDATE deliveries AS d SET status = 'succeeded' FROM jsonb_to_recordset(:rows) AS v",
        'update "org_x"."deliveries" set status = :s where id = :id',
        "DELETE FROM outbox WHERE id = ANY(:ids)",
        "INSERT INTO audit_entries (id) VALUES (:id) ON CONFLICT DO NOTHING",
    ],
)
def test_locks_notifies_and_writes_of_unversioned_tables_write_nothing(sql: str) -> None:
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
        # Writes of content tables, of tables nobody declared, of several statements.
        "UPDATE questions SET position = v.position FROM (VALUES (1)) AS v",
        "INSERT INTO question_translations (question_id) VALUES (:id)",
        "DELETE FROM categories WHERE id = :id",
        "UPDATE no_such_table SET x = 1",
        "UPDATE deliveries SET status = 'x'; UPDATE questions SET title = 'x'",
        "WITH d AS (UPDATE deliveries SET status = 'x') UPDATE questions SET title = 'y'",
    ],
)
def test_other_text_sql_may_change_anything(sql: str) -> None:
    assert statement_kind(text(sql)) == CHANGE
