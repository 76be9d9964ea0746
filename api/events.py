"""The event catalog: every event the API writes to the outbox (SPEC "Webhooks").

Webhooks subscribe to these names; services record them with ``tenancy.outbox``.
"""

from __future__ import annotations

EVENT_CATALOG = (
    "question.created",
    "question.updated",
    "question.published",
    "question.unpublished",
    "question.deleted",
    "category.created",
    "category.updated",
    "category.deleted",
    "question.translation.updated",
    "question.translation.deleted",
    "category.translation.updated",
    "category.translation.deleted",
    # Review before publishing (issue 30): data is the draft (``GET …/questions/{id}/draft``).
    "question.review_requested",
    "question.approved",
    "question.rejected",
    "import.completed",  # one per import (issue 29), instead of an event per question
    # Weekly (issue 38): data is ``GET …/analytics/gaps`` of the last 7 full days.
    "analytics.gaps",
)
