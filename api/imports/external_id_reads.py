"""The ``externalId`` of a question or category as its reads show it (issue 29): the source
item an import made it of (``zendesk:360012345``), else null. The reads get it in the same
statement (a subquery on ``external_refs``' resource index, correlated to the resource's id):
still one round trip, and one value per resource even if two sources ever named the same one
(the first in text order).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, select

from api.imports.models import ExternalRef
from api.questions import read_drafts
from api.questions.schemas import question_public

KINDS = ("question", "category")


def external_id_column(kind: str, resource_id: Any) -> ColumnElement[str | None]:
    """The Core column ``external_id`` of a read of ``kind`` whose id is ``resource_id``."""
    assert kind in KINDS, kind
    return (
        select(ExternalRef.external_id)
        .where(ExternalRef.resource_id == resource_id, ExternalRef.kind == kind)
        .order_by(ExternalRef.external_id)
        .limit(1)
        .scalar_subquery()
        .label("external_id")
    )


def external_id_sql(kind: str, resource_id: str) -> str:
    """The same in SQL text (tables unqualified: the caller binds the org's schema), for the
    reads that build their JSON in PostgreSQL."""
    assert kind in KINDS, kind
    return (
        "(SELECT r.external_id FROM external_refs r"
        f" WHERE r.resource_id = {resource_id} AND r.kind = '{kind}'"
        " ORDER BY r.external_id LIMIT 1)"
    )


def question_read(row: Any, drafts: bool) -> dict[str, Any]:
    """A read's question (a row with ``external_id`` and ``read_drafts.DRAFT_COLUMNS``): the
    public shape, its ``externalId`` and its ``draft``."""
    draft = read_drafts.draft_summary(row, drafts)
    return {**question_public(row), "externalId": row.external_id, "draft": draft}
