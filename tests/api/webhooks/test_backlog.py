"""A backlog of background work never holds a webhook delivery behind it: the embeddings of an
import (or of every write a stopped worker missed) have their own queue, and a worker's threads
take every other queue's messages first."""

from __future__ import annotations

import pytest
import redis

from tasks.embeddings import EMBED_ACTOR
from tasks.embeddings import QUEUE as EMBEDDINGS_QUEUE
from tenancy.queue import NAMESPACE, enqueue
from tenancy.settings import get_settings
from tests.api.questions.helpers import create
from tests.api.webhooks.conftest import create_webhook
from tests.fixtures.orgs import OrgClient
from tests.fixtures.queues import take_queued
from tests.fixtures.receiver import Receiver

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("processes")]

BACKLOG = 1_500  # embeddings messages: far more than a worker finishes in the wait below


def embeddings_waiting() -> int:
    client = redis.Redis.from_url(get_settings().require_redis_url())
    try:
        return int(client.llen(f"{NAMESPACE}:{EMBEDDINGS_QUEUE}"))
    finally:
        client.close()


async def test_a_delivery_does_not_wait_behind_a_backlog_of_embeddings(
    org: OrgClient, receiver: Receiver
) -> None:
    question = await create(org, title="What is your refund policy?", answer="30 days.")
    endpoint = receiver.endpoint()
    await create_webhook(org, endpoint.url, events=["category.created"])
    # Each message is a real run of the actor (the question's text is unchanged after the
    # first: a hash comparison and two transactions).
    for _ in range(BACKLOG):
        enqueue(EMBED_ACTOR, org.info.id, [question["id"]], queue=EMBEDDINGS_QUEUE)
    try:
        assert embeddings_waiting() > BACKLOG // 2
        r = await org.post("/categories", json={"name": "Behind nothing"})
        assert r.status_code == 201
        await endpoint.wait_for(1, timeout=60)
        # Delivered while most of the backlog is still queued: it did not wait for it.
        assert embeddings_waiting() > BACKLOG // 3
    finally:
        # The rest of the backlog is not work the package's later tests should share.
        take_queued(org.info.id, EMBED_ACTOR, EMBEDDINGS_QUEUE)
