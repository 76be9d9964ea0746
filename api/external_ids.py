"""Where a question or category came from (issue 29): the source item an import made it of
(``zendesk:360012345``), kept in the tenant table ``external_refs`` and shown as the
resource's ``externalId`` (null when it was not imported). The imports write the table
(``api/imports/writer.py``); the questions' and categories' reads and writes show it, in the
same statement (a subquery on ``external_refs``' resource index, correlated to the resource's
id): still one round trip, and one value per resource even if two sources ever named the same
one (the first in text order).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, ScalarSelect, Select, String, select
from sqlalchemy.orm import Mapped, mapped_column

from tenancy.db import TenantBase

KINDS = ("question", "category")


class ExternalRef(TenantBase):
    """The resource an import made of an item of a source (``zendesk:360012345``)."""

    __tablename__ = "external_refs"

    kind: Mapped[str] = mapped_column(String(12), primary_key=True)  # question | category
    external_id: Mapped[str] = mapped_column(String(300), primary_key=True)
    resource_id: Mapped[str] = mapped_column(String(40))


def imported_as(kind: str, external_id: str) -> Select[str]:
    """The id of the resource (``question``, ``category``) an import made of ``external_id``:
    the ``?externalId=`` filter of the lists."""
    return select(ExternalRef.resource_id).where(
        ExternalRef.kind == kind, ExternalRef.external_id == external_id
    )


def external_id_of(kind: str, resource_id: Any) -> ScalarSelect[str | None]:
    """The ``externalId`` of the resource of ``kind`` whose id is ``resource_id`` (a column
    of the enclosing statement, correlated to it): a scalar subquery."""
    assert kind in KINDS, kind
    return (
        select(ExternalRef.external_id)
        .where(ExternalRef.resource_id == resource_id, ExternalRef.kind == kind)
        .order_by(ExternalRef.external_id)
        .limit(1)
        .correlate_except(ExternalRef)
        .scalar_subquery()
    )


def external_id_column(kind: str, resource_id: Any) -> ColumnElement[str | None]:
    """The same as the Core column ``external_id`` of a read (or a ``RETURNING``)."""
    return external_id_of(kind, resource_id).label("external_id")


def external_id_sql(kind: str, resource_id: str) -> str:
    """The same in SQL text (tables unqualified: the caller binds the org's schema), for the
    reads that build their JSON in PostgreSQL."""
    assert kind in KINDS, kind
    return (
        "(SELECT r.external_id FROM external_refs r"
        f" WHERE r.resource_id = {resource_id} AND r.kind = '{kind}'"
        " ORDER BY r.external_id LIMIT 1)"
    )
