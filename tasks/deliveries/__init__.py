"""Sending webhook deliveries: signed afresh per attempt, retried, re-driven, never lost.

The delivery rows are the source of truth. The outbox relay sends the deliveries it fans out
itself, from the worker's event loop (``tasks/relay.py``: ``engine.deliver_many`` per
webhook, no message); the other senders send one ``deliveries.send_many`` message per
webhook and up to SEND_BATCH new deliveries (``deliveries.send`` for one: retries,
re-drive, tests) (``api/webhooks/dispatch.py``); both take ids and are idempotent.

- ``actors.py``: the actors and the ``deliveries-redrive`` periodic job. Importing this
  package records them.
- ``engine.py``: one message's sends to one webhook. Deliveries in flight per webhook are
  limited (``FAQ_WEBHOOK_MAX_IN_FLIGHT``); one message per process sends to a webhook at a
  time, and other messages for it hand over their ids to it and return; without a slot the
  message comes back later (0.1 s, doubling while busy). It sends in waves of up to the
  limit; a send whose inbox grows past its wave takes more of the free slots (wider
  waves). Behind a receiver that answers quickly, the record of the last waves and the claim
  of the next WAVES_PER_CLAIM share one transaction, run while a wave is in flight, and a
  send goes on QUICK_HOLD_SECONDS longer before it hands its inbox back. A message holds
  its thread about BATCH_HOLD_SECONDS at most (then the rest is queued again), and a send
  still waiting on its receiver after DETACH_AFTER_SECONDS finishes on the event loop while
  its message returns: a receiver that times out holds no worker thread. The engine owns
  every transaction of these paths.
- ``batch.py``: group commit of the bookkeeping: the record/claim requests of every send to
  one org waiting meanwhile on this event loop go into one transaction (one ``record_wave``,
  one ``claim_wave``), one such transaction per org at a time.
- ``throttle.py``: the in-flight limit: a short wait on an in-process semaphore, then Redis
  slots with a lease (across processes).
- ``store.py``: the rows' SQL, in the caller's transaction. The claim (one conditional UPDATE
  for the wave in the common case, else the row ``FOR UPDATE SKIP LOCKED``) checks each is
  pending and due and leases it: ``next_attempt_at`` moves to the end of the lease and a
  fresh ``lease_token`` names this attempt; a duplicate message finds it not due (or done)
  and stops. The record appends each attempt and, if the lease is still ours, schedules the
  retry (a delayed message after commit) or ends the delivery; a wave's successes in one
  statement.
- ``transport.py``: one attempt: resolve the host again, refuse non-public addresses, connect
  only to the addresses checked (a resolver that returns exactly those), SNI and ``Host``
  stay the URL's host, no redirects, total timeout ``FAQ_WEBHOOK_TIMEOUT_SECONDS``, at most
  2 KB of the response body read.
- ``attempts.py``: the ``Claim`` and its ``Outcome``, and the attempt records.
- ``policy.py``: timing: attempts, retry backoff and ``Retry-After``, leases, busy waits.
- ``redrive.py``: a worker that dies mid-attempt leaves the lease to expire (and ids handed
  over or detached sends, the rows pending); the ``deliveries-redrive`` job finds pending
  deliveries overdue by ``FAQ_WEBHOOK_REDRIVE_AFTER_SECONDS`` through the small
  ``shared.delivery_schedule`` table (one row per org with pending deliveries) and re-sends
  them.
"""

from __future__ import annotations

import tasks.deliveries.actors  # noqa: F401  (records the actors and the periodic job)
