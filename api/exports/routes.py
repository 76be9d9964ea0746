"""HTTP routes of exports: make one (202), read it, download its bundle (streamed)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response
from quart_schema import document_response, validate_querystring

from api.exports import service
from api.exports.schemas import ExportJobQuery, ExportOut
from api.http.binding import current_org, db, requires_scope, tenancy
from api.schemas import Envelope

exports = Blueprint("exports", __name__, url_prefix="/exports")
Result = tuple[dict[str, Any], int]


@exports.post("")
@requires_scope("admin")
@validate_querystring(ExportJobQuery)
@document_response(Envelope[ExportOut], 202)
async def create_export(query_args: ExportJobQuery) -> Result:
    """Export everything the organization holds as a zip of NDJSON files (202: made by a
    worker; `revisions=true` adds each question's revisions)."""
    return {"data": await service.create_export(db(), current_org(), query_args.revisions)}, 202


@exports.get("/<export_id>")
@requires_scope("admin")
@document_response(Envelope[ExportOut])
async def get_export(export_id: str) -> Result:
    """An export: its status and, once it succeeded, its download link (24 hours)."""
    return {"data": await service.get_export(db(), current_org(), export_id)}, 200


@exports.get("/<export_id>/download")
@requires_scope("admin")
async def download_export(export_id: str) -> Response:
    """The bundle (application/zip), streamed."""
    org = current_org()
    pieces = await service.download_plan(db(), export_id)  # 409, 410: before the body
    response = Response(
        service.bundle_pieces(tenancy().engine, org.schema_name, export_id, pieces),
        content_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{org.slug}-{export_id}.zip"'},
    )
    response.timeout = None
    return response
