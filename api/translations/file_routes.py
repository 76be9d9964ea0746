"""HTTP routes of translation files (XLIFF 1.2): export for translators, import of their work.

The import reads the raw body as XLIFF. Accepted ``Content-Type``: ``application/xliff+xml``,
``application/x-xliff+xml``, ``application/x-xliff``, ``application/xml``, ``text/xml``, and
(for ``curl --data-binary``) none or ``application/x-www-form-urlencoded``; any other is 415
``unsupported_media_type``. A body that is not XLIFF 1.x is 400 ``validation_failed`` (field
``body``); its size is bounded by the app's body limit (``FAQ_MAX_BODY_BYTES``, 413).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from quart import Blueprint, Response, request
from quart_schema import document_response, validate_querystring

from api.binding import current_org, db, requires_scope
from api.errors import ServiceError, field_error
from api.schemas import Envelope, QueryArgs, ResponseModel
from api.translations import files
from api.translations.xliff import MEDIA_TYPE

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
    """Every live question and category as one XLIFF 1.2 document (application/xliff+xml):
    one unit per field (`question/{id}/title`, `question/{id}/answer`, `category/{id}/name`,
    `category/{id}/description`), one `<file>` per source locale, the target in `locale` where
    a translation exists (state `final` published, `translated` draft or category,
    `needs-review-translation` outdated)."""
    body = await files.export_document(db(), current_org(), query_args.locale)
    filename = f"{current_org().slug}-{files.export_locale(current_org(), query_args.locale)}.xlf"
    return Response(
        body,
        content_type=f"{MEDIA_TYPE}; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


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
