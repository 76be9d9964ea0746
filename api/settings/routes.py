"""``/api/v1/{org}/settings``: the org's default locale and enabled locales (issue 15)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, request
from quart_schema import document_response, validate_request

from api.audiences import readers
from api.audiences.schemas import ReadersOut, ReadersUpdate
from api.helpcenter import theming
from api.helpcenter.assets import bounded_body
from api.http import conditional_locks as locks
from api.http.binding import current_org, db, requires_scope, tenancy
from api.http.conditional import conditional
from api.schemas import Envelope
from api.settings import service, workflow_part
from api.settings.schemas import SettingsOut, SettingsUpdate
from tenancy.transactions import after_commit

settings = Blueprint("settings", __name__, url_prefix="/settings")
Result = tuple[dict[str, Any], int]


@settings.get("")
@requires_scope("read")
@document_response(Envelope[SettingsOut])
async def get_settings() -> Result:
    """The organization's default locale and enabled locales, its help center and its
    publishing workflow."""
    return {"data": await _settings()}, 200


async def _settings() -> dict[str, Any]:
    """The settings with the workflow (issue 30; ``api.settings.workflow_part``)."""
    found = await service.get_settings(db(), current_org())
    return await workflow_part.with_workflow(db(), current_org(), found)


@settings.patch("")
@requires_scope("admin")
@validate_request(SettingsUpdate)
@document_response(Envelope[SettingsOut])
@conditional(locks.SETTINGS)
async def update_settings(data: SettingsUpdate) -> Result:
    """Change the default locale and/or the enabled locales (BCP 47 tags, canonical case).

    Removing a locale that still has translations is 409 ``locale_in_use``; the plan caps the
    number of locales, the default included (402 ``plan_limit_reached``). ``workflow``:
    ``{"requireReview": bool}`` (issue 30; on needs PRO: 403 ``plan_required``).
    """
    changes = data.model_dump(by_alias=True, include=data.model_fields_set)
    flow = workflow_part.changes_of(data)  # issue 30: the same setting as /settings/workflow
    changes.pop(workflow_part.FIELD, None)
    result = await service.update_settings(db(), current_org(), changes)
    result = await workflow_part.with_workflow(db(), current_org(), result, flow)
    # Every process drops its cached org on the NOTIFY; this one at once, so the client's
    # next request (maybe before the NOTIFY arrives) already sees the change.
    after_commit(db(), "directory.clear", tenancy().directory.clear)
    return {"data": result}, 200


@settings.put("/help-center/logo")
@requires_scope("admin")
@document_response(Envelope[SettingsOut])
async def upload_logo() -> Result:
    """Set the help center's logo: the raw image as the body (PNG, JPEG, WebP or GIF, at most
    256 KiB, its ``Content-Type`` saying which); served at ``helpCenter.logoUrl``."""
    data = await bounded_body(theming.MAX_LOGO_BYTES)
    await theming.save_logo(db(), current_org(), request.headers.get("Content-Type"), data)
    after_commit(db(), "directory.clear", tenancy().directory.clear)
    return {"data": await _settings()}, 200


@settings.delete("/help-center/logo")
@requires_scope("admin")
@document_response(Envelope[SettingsOut])
async def delete_logo() -> Result:
    """Remove the help center's logo (the header shows the title alone)."""
    await theming.delete_logo(db(), current_org())
    after_commit(db(), "directory.clear", tenancy().directory.clear)
    return {"data": await _settings()}, 200


@settings.get("/readers")
@requires_scope("admin")
@document_response(Envelope[ReadersOut])
async def get_readers() -> Result:
    """How reader tokens are verified (issue 39): issuer, maximum lifetime, keys; never a
    secret."""
    return {"data": await readers.get_readers(db(), current_org())}, 200


@settings.put("/readers")
@requires_scope("admin")
@validate_request(ReadersUpdate)
@document_response(Envelope[ReadersOut])
@conditional(locks.SETTINGS)
async def put_readers(data: ReadersUpdate) -> Result:
    """Replace how reader tokens are verified. A new HS256 key's secret is in this response
    only (``keys[].secret``); RS256/ES256 keys come as PEM, JWK or a JWKS document."""
    result = await readers.put_readers(db(), current_org(), data)
    after_commit(db(), "directory.clear", tenancy().directory.clear)
    return {"data": result}, 200
