"""HTTP routes of imports: the upload is the body, in its own ``Content-Type``."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, request
from quart_schema import document_response, validate_querystring

from api.http.binding import current_org, db, requires_scope
from api.imports import service
from api.imports.schemas import ImportJobOut, ImportQuery
from api.schemas import Envelope, ErrorBody
from billing.plans import Plan, import_upload_bytes

imports = Blueprint("imports", __name__, url_prefix="/imports")
Result = tuple[dict[str, Any], int]


@imports.post("")
@requires_scope("admin")
@validate_querystring(ImportQuery)
@document_response(Envelope[ImportJobOut], 202)
@document_response(ErrorBody, 415)
async def create_import(query_args: ImportQuery) -> Result:
    """Import another help center's export, a CSV, a zip of Markdown files or one of our bundles.

    ``format`` names which; the body is the file (`application/json`, `text/csv`,
    `application/zip`). Answers 202 with the job; a malformed file is 400 and leaves nothing."""
    org = current_org()
    limit = import_upload_bytes(Plan(org.plan))
    data = await service.create_import(
        db(),
        org,
        format_name=query_args.format,
        media_type=(request.mimetype or "").lower(),
        dry_run=query_args.dry_run,
        per_question_events=query_args.per_question_events,
        body=aiter(request.body),
        limit=limit,
    )
    return {"data": data}, 202


@imports.get("/<import_id>")
@requires_scope("admin")
@document_response(Envelope[ImportJobOut])
async def get_import(import_id: str) -> Result:
    """An import: its status, counts, progress and the first per-item errors."""
    return {"data": await service.get_import(db(), import_id)}, 200


@imports.post("/<import_id>/cancel")
@requires_scope("admin")
@document_response(Envelope[ImportJobOut])
async def cancel_import(import_id: str) -> Result:
    """Cancel an import: at once when queued, after its current batch when running."""
    return {"data": await service.cancel_import(db(), import_id)}, 200
