"""The cost of a write (issue 40): a PATCH with ``If-Match`` in an org that requires review
locks the question once and sends few statements. Before, the review guard, the conditional
lock and the PATCH each locked the row (three ``FOR UPDATE``) and a savepoint wrapped every
update: about ten statements beside the transaction's own."""

from __future__ import annotations

import re

from billing.plans import Plan
from tests.api.keys.helpers import as_key
from tests.api.questions.helpers import create
from tests.api.questions.test_review import require_review, team
from tests.api.questions.test_round_trips import RoundTrips, round_trips, settle
from tests.conftest import OrgFactory

__all__ = ["round_trips"]
# The transaction's own messages: binding, BEGIN, COMMIT, the pool's liveness check.
_OWN = re.compile(r"^(SELECT set_config|BEGIN|COMMIT|ROLLBACK|SELECT 1$)")
MAX_STATEMENTS = 5


def data_statements(sent: list[str]) -> list[str]:
    """The statements of a request beside the transaction's own, each once (asyncpg's logger
    names an executemany again, without the schema placeholder)."""
    out: list[str] = []
    for statement in sent:
        text = " ".join(statement.replace("__tenant__.", "").split())
        if _OWN.match(text) or (out and out[-1] == text):
            continue
        if text.startswith("INSERT INTO outbox ") and any(
            s.startswith("INSERT INTO outbox ") for s in out
        ):
            continue
        out.append(text)
    return out


async def test_a_conditional_patch_under_review_locks_the_row_once(
    org_factory: OrgFactory, round_trips: RoundTrips
) -> None:
    org = await org_factory(Plan.PRO)
    people = await team(org)
    _, author_key = people["author"]
    q = await create(org, status="draft", title="Cost of a write")
    assert (await require_review(org)).status_code == 200
    path = f"/questions/{q['id']}"
    for n in range(2):  # the second, warm
        r = await as_key(org, author_key, "GET", path)
        tag = r.headers["ETag"]
        await settle(round_trips)
        round_trips.sent.clear()
        r = await as_key(
            org, author_key, "PATCH", path, json={"answer": f"v{n}"}, headers={"If-Match": tag}
        )
        assert r.status_code == 200, await r.get_data()
        await settle(round_trips)
    statements = data_statements(round_trips.sent)
    locks = [s for s in statements if "FROM questions" in s and " FOR UPDATE" in s]
    assert len(locks) == 1, statements
    assert len(statements) <= MAX_STATEMENTS, "\n".join(statements)
    assert not any(s.startswith("SAVEPOINT") for s in statements), statements
