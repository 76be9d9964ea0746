"""HTTP routes of translation files (XLIFF 1.2): export for translators, import of their work.

The import reads the raw body as XLIFF. Accepted ``Content-Type``: ``application/xliff+xml``,
``application/x-xliff+xml``, ``application/x-xliff``, ``application/xml``, ``text/xml``, and
(for ``curl --data-binary``) none or ``application/x-www-form-urlencoded``; any other is 415
``unsupported_media_type``. A body that is not XLIFF 1.x is 400 ``validation_failed`` (field
``body``), and so is a document with a DOCTYPE; its size is bounded by the app's body limit
(``FAQ_MAX_BODY_BYTES``, 413) before it is parsed, in a thread. The export streams.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from quart import Blueprint, Response, request
from quart_schema import document_response, validate_querystring

from api.errors import ServiceError, field_error
from api.http.binding import current_org, db, requires_scope, tenancy
from api.schemas import Envelope, QueryArgs, ResponseModel
from api.translations import files
from api.translations.xliff import MEDIA_TYPE
from tenancy.db import tenant_session

translation_files = Blueprint("translation_files", __name__, url_prefix="/translations")

ACCEPTED_TYPES = frozenset(
    {
        "application/xliff+xml",
        "application/x-xliff+xml",
        "application/x-xliff",
        "application/xml",
        "text/xml",
        "application/x-www-form-urlencoded",  # curl --data-binary without -H
        "",
    }
)


class UnsupportedMediaType(ServiceError):
    status = 415
    code = "unsupported_media_type"
    message = "Send the XLIFF document as application/xliff+xml."


class ExportQuery(QueryArgs):
    locale: str | None = Field(default=None, max_length=35)


class ImportError_(ResponseModel):
    unit: str
    code: str
    issue: str


class ImportOut(ResponseModel):
    updated: int
    unchanged: int
    errors: list[ImportError_]


@translation_files.get("/export")
@requires_scope("read")
@validate_querystring(ExportQuery)
async def export_translations(query_args: ExportQuery) -> Response:
    """Export every live question and category as one XLIFF 1.2 document.

    The document (application/xliff+xml) has one unit per field (`question/{id}/title`,
    `question/{id}/answer`, `category/{id}/name`, `category/{id}/description`), one `<file>`
    per source locale, the target in `locale` where a translation exists (state `final`
    published, `translated` draft or category, `needs-review-translation` outdated)."""
    org = current_org()
    plan = await files.plan_export(db(), org, query_args.locale)  # 400, 413: before the body
    # The body streams after the request's context is gone: its own session, whose reads
    # each run alone (no transaction spans the stream).
    session = tenant_session(tenancy().engine, org.schema_name)
    response = Response(
        files.export_chunks(session, plan),
        content_type=f"{MEDIA_TYPE}; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{org.slug}-{plan.locale}.xlf"'},
    )
    response.timeout = None  # as long as the client reads (each read has its statement_timeout)
    return response


@translation_files.post("/import")
@requires_scope("write")
@document_response(Envelope[ImportOut])
async def import_translations() -> tuple[dict[str, Any], int]:
    """Write the targets of an XLIFF 1.2 document (the body, application/xliff+xml) as draft
    translations. Per-unit errors; a resource with an erroneous unit is not written."""
    media_type = (request.mimetype or "").lower()
    if media_type not in ACCEPTED_TYPES:
        raise UnsupportedMediaType(
            details=field_error("Content-Type", f"{media_type} not accepted")
        )
    body = await request.get_data(as_text=False)
    assert isinstance(body, bytes)
    return {"data": await files.import_document(db(), current_org(), body)}, 200
