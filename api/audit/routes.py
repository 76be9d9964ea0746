"""``/api/v1/{org}/audit`` (admin): the organization's audit log, every mutation of every
resource, newest first; ``/audit/export`` streams it as NDJSON, oldest first (issue 17)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response
from quart_schema import document_response, tag, validate_querystring

from api.audit import service
from api.audit.schemas import AuditExportQuery, AuditListQuery, OrgAuditEntryOut
from api.http.binding import current_org, cursors, db, requires_scope, tenancy
from api.http.pagination import list_body
from api.schemas import ListEnvelope
from tenancy.db import tenant_session

audit = Blueprint("audit", __name__, url_prefix="/audit")
NDJSON = "application/x-ndjson"


@audit.get("")
@requires_scope("admin")
@tag(["audit"])
@validate_querystring(AuditListQuery)
@document_response(ListEnvelope[OrgAuditEntryOut])
async def list_audit(query_args: AuditListQuery) -> tuple[dict[str, Any], int]:
    """The organization's audit log, newest first.

    Every mutation of every resource (categories, questions and their translations, webhooks,
    keys, settings, the plan), visible within 2 s of the change. Filters: ``resource``,
    ``resourceId``, ``action``, ``actor`` (a key fingerprint, or ``system``), ``since``
    (inclusive) and ``until`` (exclusive), ISO 8601 timestamps. ``before``/``after`` hold the
    changed fields of an update, the whole resource on create (after) and delete (before).
    """
    after = cursors().decode("audit", query_args.cursor) if query_args.cursor else None
    items, last = await service.list_entries(
        db(),
        limit=query_args.limit,
        after=after,
        resource=query_args.resource,
        resource_id=query_args.resource_id,
        action=query_args.action,
        actor=query_args.actor,
        since=query_args.since,
        until=query_args.until,
    )
    cursor = cursors().encode("audit", last) if last is not None else None
    return list_body(items, query_args.limit, cursor), 200


@audit.get("/export")
@requires_scope("admin")
@tag(["audit"])
@validate_querystring(AuditExportQuery)
async def export_audit(query_args: AuditExportQuery) -> Response:
    """The organization's audit log as NDJSON, oldest first, for a SIEM.

    One entry per line (the shape of ``GET …/audit``), streamed in batches of at most 500
    entries and 2 MiB. Filters as the list:
    ``since`` (inclusive) and ``until`` (exclusive), default everything; ``resource``,
    ``action``, ``actor``. An empty window is an empty body.
    """
    filters = service.export_filters(
        resource=query_args.resource,
        action=query_args.action,
        actor=query_args.actor,
        since=query_args.since,
        until=query_args.until,
    )
    # The body streams after the request's context is gone: its own session, whose reads
    # each run alone (no transaction spans the stream).
    session = tenant_session(tenancy().engine, current_org().schema_name)
    response = Response(service.export_lines(session, filters), mimetype=NDJSON)
    response.timeout = None  # as long as the client reads (each read has its statement_timeout)
    return response
