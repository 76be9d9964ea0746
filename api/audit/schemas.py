"""Request and response models of ``/audit``, the organization's audit log (issue 17)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from api.schemas import QueryArgs, ResponseModel, Timestamp

# tenancy.audit.AUDIT_RESOURCES, spelled out for the OpenAPI document (an enum).
Resource = Literal[
    "category", "question", "webhook", "key", "settings", "plan", "member", "audience"
]


class AuditWindow(QueryArgs):
    """The filters of both routes; ``since`` inclusive, ``until`` exclusive."""

    resource: Resource | None = None
    action: str | None = Field(default=None, min_length=1, max_length=40)
    # A key fingerprint, or ``system`` (the service itself: scheduler, Stripe, the CLI).
    actor: str | None = Field(default=None, min_length=1, max_length=40)
    since: Timestamp | None = None
    until: Timestamp | None = None


class AuditListQuery(AuditWindow):
    resource_id: str | None = Field(default=None, min_length=1, max_length=64)
    limit: int = Field(default=50, ge=1, le=100)
    cursor: str | None = Field(default=None, max_length=512)


class AuditExportQuery(AuditWindow):
    pass


class OrgAuditActor(ResponseModel):
    type: Literal["apiKey", "system", "member"]
    id: str  # a key fingerprint, scheduler | stripe | cli, or a member id (issue 30)
    key_fingerprint: str | None = None  # a member's key (type member only)


class OrgAuditEntryOut(ResponseModel):
    id: str
    resource: Resource
    resource_id: str | None
    action: str
    actor: OrgAuditActor
    before: Any  # changed fields only for updates; null on create
    after: Any  # changed fields only for updates; null on delete
    created_at: str
