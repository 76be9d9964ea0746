"""The delivery rows' SQL: claim, record, postpone, unclaim. Every function runs in the
caller's session and never commits: the engine (``engine.py``) owns each transaction, and
work that must wait for the commit (a retry's message) is queued on the session.

- ``claim_wave``: the common case of a wave in one conditional UPDATE: each row pending, due,
  its webhook not deleted, no lost attempt to write down; each gets a fresh lease.
- ``claim_one``: the careful way, one row ``FOR UPDATE SKIP LOCKED``: writes down a lost
  attempt, ends a delivery out of attempts or whose webhook was deleted, else leases it.
- ``record_wave``: a wave's attempts, the successes in one statement; each other attempt is
  appended and, if the lease is still ours, decides what comes next (a retry, delayed, after
  commit, with the org's re-drive schedule lowered; a 410 deactivates the webhook).
- ``postpone_due``: no slot free: push due deliveries back a little.
- ``unclaim``: give back the leases of claims never sent.

A lease: ``next_attempt_at`` moves to the end of the lease (``policy.lease_seconds``) and a
fresh ``lease_token`` names the attempt; a duplicate message finds the row not due (or done).
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import String, any_, bindparam, func, select, text, update
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.ext.asyncio import AsyncSession

from api.webhooks.dispatch import retry_after_commit
from api.webhooks.models import DELIVERIES as D
from api.webhooks.models import TS, Delivery, DeliverySchedule, Webhook
from api.webhooks.models import WEBHOOKS as W
from api.webhooks.service import stop_pending_deliveries
from tasks.deliveries.attempts import Claim, Outcome, lost_attempt
from tasks.deliveries.policy import DUE_TOLERANCE, MAX_ATTEMPTS, lease_seconds, next_retry_seconds
from tenancy.audit import audit_change, system_actor
from tenancy.clock import utcnow
from tenancy.schedule import mark_due
from tenancy.settings import Settings


def _ids(delivery_ids: list[str]) -> Any:
    return D.c.id == any_(bindparam("ids", delivery_ids, type_=ARRAY(String)))


# ---- claims --------------------------------------------------------------------------------

# What a claim reads back of each row it leased.
_LEASED = (
    D.c.id,
    D.c.webhook_id,
    D.c.event,
    D.c.data,
    D.c.attempt_count,
    W.c.url,
    W.c.secret_ciphertext,
)


def _lease(token: str, now: datetime, settings: Settings) -> dict[str, Any]:
    """The values that lease a row to the attempt ``token`` names, until the lease ends."""
    return {
        "attempt_count": D.c.attempt_count + 1,
        "lease_token": token,
        "attempt_started_at": now,
        "next_attempt_at": now + timedelta(seconds=lease_seconds(settings)),
        "updated_at": now,
    }


def _claim(org_id: str, token: str, row: Any) -> Claim:
    """The claim of a row read back as ``_LEASED``."""
    return Claim(
        org_id=org_id,
        delivery_id=row.id,
        webhook_id=row.webhook_id,
        event=row.event,
        data=row.data,
        url=row.url,
        secret_ciphertext=row.secret_ciphertext,
        token=token,
        attempt_number=row.attempt_count,
    )


async def claim_wave(
    session: AsyncSession, org_id: str, delivery_ids: list[str], settings: Settings
) -> list[Claim]:
    """The common case in one statement for a wave of deliveries (one webhook): pending, due,
    webhook not deleted, no lost attempt to write down. Each claimed row gets a fresh lease
    token naming this attempt (a random token per wave: it names one attempt of each row).
    Anything else (or a row another claim holds) is left for ``claim_one``."""
    now = utcnow()
    token = secrets.token_hex(8)
    rows = (
        await session.execute(
            update(D)
            .where(
                _ids(delivery_ids),
                D.c.status == "pending",
                D.c.next_attempt_at <= now + DUE_TOLERANCE,
                D.c.attempt_count < MAX_ATTEMPTS,
                D.c.attempt_count == func.jsonb_array_length(D.c.attempts),
                W.c.id == D.c.webhook_id,
                W.c.deleted_at.is_(None),
            )
            .values(**_lease(token, now, settings))
            .returning(*_LEASED)
        )
    ).all()
    by_id = {row.id: _claim(org_id, token, row) for row in rows}
    return [by_id[i] for i in delivery_ids if i in by_id]


async def claim_one(
    session: AsyncSession, org_id: str, delivery_id: str, settings: Settings
) -> Claim | None:
    """One delivery the careful way (locked; skipped while another claim holds it). None
    when it is not to be sent now: unknown, locked, done, not due, or ended here (its
    webhook deleted, or out of attempts)."""
    row = (
        await session.execute(
            select(Delivery, Webhook)
            .join(Webhook, Webhook.id == Delivery.webhook_id)
            .where(Delivery.id == delivery_id)
            .with_for_update(of=Delivery, skip_locked=True)
        )
    ).first()
    if row is None:
        return None  # unknown, or another worker is claiming it right now
    delivery, webhook = row
    now = utcnow()
    if delivery.status != "pending":
        return None
    if webhook.deleted_at is not None:
        await stop_pending_deliveries(session, webhook.id)
        return None
    if delivery.next_attempt_at is not None and delivery.next_attempt_at > now + DUE_TOLERANCE:
        return None  # leased by an attempt in flight, or a retry not yet due
    attempts = list(delivery.attempts)
    if delivery.attempt_count > len(attempts):
        attempts.append(lost_attempt(delivery.attempt_started_at))
    values: dict[str, Any] = {"attempts": attempts, "updated_at": now}
    if delivery.attempt_count >= MAX_ATTEMPTS:
        values.update(status="failed", next_attempt_at=None, lease_token=None)
        await session.execute(update(Delivery).where(Delivery.id == delivery.id).values(**values))
        return None
    token = secrets.token_hex(8)
    values.update(_lease(token, now, settings))
    leased = (
        await session.execute(
            update(D)
            .where(D.c.id == delivery.id, W.c.id == D.c.webhook_id)
            .values(**values)
            .returning(*_LEASED)
        )
    ).one()
    return _claim(org_id, token, leased)


async def unclaim(session: AsyncSession, claims: list[Claim]) -> None:
    """Give back leases of claims never sent (an error before the send): the rows are due
    again, as if never claimed (no attempt was made, so none is recorded)."""
    now = utcnow()
    for claim in claims:
        await session.execute(
            update(D)
            .where(
                D.c.id == claim.delivery_id,
                D.c.status == "pending",
                D.c.lease_token == claim.token,
            )
            .values(
                attempt_count=D.c.attempt_count - 1,
                lease_token=None,
                next_attempt_at=now,
                updated_at=now,
            )
        )


async def postpone_due(session: AsyncSession, delivery_ids: list[str], seconds: float) -> list[str]:
    """No slot free: push due deliveries back a little (so the re-drive leaves them alone);
    returns those moved (the others are done, or leased by an attempt in flight)."""
    later = utcnow() + timedelta(seconds=seconds)
    moved = await session.execute(
        update(D)
        .where(
            _ids(delivery_ids),
            D.c.status == "pending",
            D.c.next_attempt_at <= utcnow() + DUE_TOLERANCE,
        )
        .values(next_attempt_at=later)
        .returning(D.c.id)
    )
    found = set(moved.scalars())
    return [i for i in delivery_ids if i in found]


# ---- records -------------------------------------------------------------------------------

# Every success of a wave in one statement (the common case): append the attempt, note when
# the body sent was signed, end the delivery. Rows no longer pending are left out (recorded
# one by one). Each row's ``attempts`` is the one-element array to append, built in Python:
# only IMMUTABLE functions may take a column in a tenant UPDATE (Citus routes nothing else;
# ``jsonb_build_array`` is STABLE), ``jsonb || jsonb`` is IMMUTABLE.
_SUCCEEDED = text(
    """UPDATE deliveries AS d
SET attempts = d.attempts || v.attempts, sent_at = v.sent_at,
    status = 'succeeded', next_attempt_at = NULL, lease_token = NULL, updated_at = :now
FROM jsonb_to_recordset(CAST(:rows AS jsonb)) AS v(id text, attempts jsonb, sent_at timestamptz)
WHERE d.id = v.id AND d.status = 'pending'
RETURNING d.id"""
).bindparams(bindparam("rows", type_=JSONB), bindparam("now", type_=TS))


def _appended(outcome: Outcome) -> Any:
    return D.c.attempts.op("||", return_type=JSONB)(
        bindparam(None, [outcome.record()], type_=JSONB)
    )


async def record_wave(
    session: AsyncSession, done: list[tuple[Claim, Outcome]], settings: Settings
) -> dict[str, str]:
    """Record a wave's attempts, the successes in one statement; returns what happened to
    each delivery."""
    results: dict[str, str] = {}
    succeeded = [(c, o) for c, o in done if o.succeeded]
    if succeeded:
        now = utcnow()
        rows = [
            {"id": c.delivery_id, "attempts": [o.record()], "sent_at": o.at.isoformat()}
            for c, o in succeeded
        ]
        decided = set((await session.execute(_SUCCEEDED, {"rows": rows, "now": now})).scalars())
        for claim, outcome in succeeded:
            if claim.delivery_id in decided:
                results[claim.delivery_id] = "succeeded"
            else:
                results[claim.delivery_id] = await _decide(session, claim, outcome, settings)
    for claim, outcome in done:
        if not outcome.succeeded:
            results[claim.delivery_id] = await _decide(session, claim, outcome, settings)
    return results


async def _decide(session: AsyncSession, claim: Claim, outcome: Outcome, settings: Settings) -> str:
    """Append the attempt; if the lease is still ours, decide what comes next. A success is a
    success whoever holds the lease; a failure decides nothing once another attempt took over."""
    now = utcnow()
    values: dict[str, Any] = {
        "attempts": _appended(outcome),
        "sent_at": outcome.at,  # the body sent was signed then (the public payload)
        "updated_at": now,
    }
    condition = [D.c.id == claim.delivery_id, D.c.status == "pending"]
    next_at: datetime | None = None
    delay = 0.0
    if outcome.succeeded:
        values.update(status="succeeded", next_attempt_at=None, lease_token=None)
        result = "succeeded"
    else:
        condition.append(D.c.lease_token == claim.token)
        if outcome.status == 410 or claim.attempt_number >= MAX_ATTEMPTS:
            values.update(status="failed", next_attempt_at=None, lease_token=None)
            result = "gone" if outcome.status == 410 else "failed"
        else:
            delay = next_retry_seconds(
                outcome.status, outcome.retry_after, claim.attempt_number, now, settings
            )
            next_at = now + timedelta(seconds=delay)
            values.update(next_attempt_at=next_at, lease_token=None)
            result = "retry"
    decided = (
        await session.execute(update(D).where(*condition).values(**values).returning(D.c.id))
    ).first()
    if decided is None:
        # Ended meanwhile (webhook deleted, a 410) or another attempt holds the lease.
        await session.execute(
            update(D)
            .where(D.c.id == claim.delivery_id)
            .values(attempts=_appended(outcome), updated_at=now)
        )
        result = "superseded"
    elif result == "gone":
        switched_off = (
            await session.execute(
                update(W)
                .where(W.c.id == claim.webhook_id, W.c.active.is_(True))
                .values(active=False, updated_at=now)
                .returning(W.c.id)
            )
        ).first()
        if switched_off is not None:
            # The receiver said 410 Gone: the service switched the webhook off.
            await audit_change(
                session,
                claim.org_id,
                resource="webhook",
                resource_id=claim.webhook_id,
                action="deactivated",
                actor=system_actor("delivery"),
                before={"active": True},
                after={"active": False},
            )
        await stop_pending_deliveries(session, claim.webhook_id)
    elif next_at is not None:
        await mark_due(session, DeliverySchedule, claim.org_id, next_at)
        retry_after_commit(session, claim.org_id, claim.delivery_id, claim.webhook_id, delay)
    return result
