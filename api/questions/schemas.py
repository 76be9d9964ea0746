"""Request and response models of questions, and the public shape of a question."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row

from api.questions.models import Question
from tenancy.clock import iso


def question_public(q: Question | Row[Any]) -> dict[str, Any]:
    """The question exactly as GET returns it (also the ``data`` of its events)."""
    return {
        "id": q.id,
        "slug": q.slug,
        "title": q.title,
        "answer": q.answer,
        "status": q.status,
        "categoryId": q.category_id,
        "order": q.sort_order,
        "publishedAt": iso(q.published_at),
        "scheduledPublishAt": iso(q.scheduled_publish_at),
        "createdAt": iso(q.created_at),
        "updatedAt": iso(q.updated_at),
    }
