"""Question embeddings, off the request path (issue 28).

The outbox relay (``tasks/relay.py``) sees every committed event; for each batch it relays,
``queue_embeddings`` sends one ``embeddings.embed_questions`` message with the ids of the
questions whose content the batch changed, once the relay's transaction has committed. Those
are read from the questions' ``audit`` events (issue 40): every change of a question or of its
translations records one in its own transaction, whatever the door (the API, MCP, an import of
any format, XLIFF, a revision restore, the publish sweep, a draft's publish), and an import
keeps them when it replaces its webhook events by one ``import.completed``. Webhook events are
not read: an import drops them, and a webhook is no reason to embed. The actor brings those
questions' embeddings up to date (``api/answers/vector_store.py``: unchanged text is skipped
by its hash, deleted questions and translations lose theirs). Nothing on a request waits for
it: a question without its embedding yet is still found lexically. A message lost (Redis
down at that moment) leaves the question to the backfill: ``embeddings.backfill`` (and
``faq embeddings backfill [SLUG]``) embeds every question of an org in bounded batches, also
after a model change, then removes the previous model's rows.

Every org gets the vectors of two models (``api.answers.multilingual.embedders``): the
configured embedder's and the multilingual embedder's, whose cosines ``/answers`` blends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.answers.embedder import Embedder
from api.answers.multilingual import embedders
from api.answers.semantic import semantic_status
from api.answers.vector_store import EmbedCounts, backfill, embed_questions
from tasks.db import worker_engine
from tasks.registry import actor
from tenancy.audit import AUDIT_EVENT
from tenancy.orgs import org_schema
from tenancy.progress import ProgressLog
from tenancy.queue import enqueue_after_commit
from tenancy.settings import get_settings

log = structlog.get_logger(__name__)

EMBED_ACTOR = "embeddings.embed_questions"
BACKFILL_ACTOR = "embeddings.backfill"
# Their own queue, after everything else: a backlog of embeddings (an import, a worker starting
# after the API has taken writes) never holds a webhook delivery or a relay behind it. A worker
# pulls from each queue it serves, and its threads take the other queues' messages first.
QUEUE = "embeddings"
PRIORITY = 100


# Audit actions of a question that change its pending draft or its review, never the text it
# serves (title, answer, translations): nothing to embed. Any other action of a question is
# read as a change of content (a new action is embedded rather than missed; an unchanged text
# costs a hash comparison). A draft's publish is also the ``updated`` of its PATCH.
WORKFLOW_ACTIONS = frozenset(
    {
        "draft_saved",
        "draft_discarded",
        "draft_scheduled",
        "draft_publish_failed",
        "review_requested",
        "approved",
        "rejected",
    }
)


def question_ids_of(events: Iterable[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The questions whose content ``(event, data)`` pairs changed: the ``resourceId`` of each
    ``audit`` event of a question (its own change or its translation's) but a workflow one.
    A reorder's entry names no question (order is not embedded)."""
    ids: set[str] = set()
    for event, data in events:
        if (
            event == AUDIT_EVENT
            and data.get("resource") == "question"
            and data.get("action") not in WORKFLOW_ACTIONS
        ):
            question_id = data.get("resourceId")
            if isinstance(question_id, str):
                ids.add(question_id)
    return sorted(ids)


def queue_embeddings(
    session: AsyncSession, org_id: str, events: Iterable[tuple[str, Mapping[str, Any]]]
) -> None:
    """In the relay's transaction: once it commits, embed the questions its events changed."""
    if not get_settings().faq_semantic_search:
        return
    ids = question_ids_of(events)
    if ids:
        enqueue_after_commit(session, f"embeddings:{org_id}", EMBED_ACTOR, org_id, ids, queue=QUEUE)


async def embed_org_questions(
    engine: AsyncEngine, org_id: str, question_ids: Sequence[str], embedder: Embedder | None = None
) -> EmbedCounts:
    """What the actor does (tests and the bench call it directly)."""
    schema = await org_schema(engine, org_id)
    if schema is None or not (await semantic_status(engine)).available:
        return EmbedCounts()
    return await embed_questions(engine, schema, question_ids, embedders(embedder))


async def backfill_org(
    engine: AsyncEngine, org_id: str, embedder: Embedder | None = None
) -> EmbedCounts:
    schema = await org_schema(engine, org_id)
    if schema is None or not (await semantic_status(engine)).available:
        return EmbedCounts()
    models = embedders(embedder)
    lines = ProgressLog(log, "embeddings_backfill", org_id=org_id)
    lines.start(models="+".join(model.name for model in models))

    def progress(questions: int, done: EmbedCounts) -> None:
        lines.progress(
            questions=questions,
            embedded=done.embedded,
            unchanged=done.unchanged,
        )

    counts = await backfill(engine, schema, models, progress=progress)
    lines.end(embedded=counts.embedded, unchanged=counts.unchanged, deleted=counts.deleted)
    return counts


@actor(
    EMBED_ACTOR,
    queue=QUEUE,
    priority=PRIORITY,
    max_retries=5,
    min_backoff=1_000,
    max_backoff=60_000,
)
async def embed_questions_actor(org_id: str, question_ids: list[str]) -> None:
    await embed_org_questions(worker_engine(), org_id, question_ids)


@actor(
    BACKFILL_ACTOR,
    queue=QUEUE,
    priority=PRIORITY,
    max_retries=3,
    min_backoff=5_000,
    max_backoff=300_000,
)
async def backfill_actor(org_id: str) -> None:
    await backfill_org(worker_engine(), org_id)
