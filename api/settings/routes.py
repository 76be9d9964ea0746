"""``/api/v1/{org}/settings``: the org's default locale and enabled locales (issue 15)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import document_response, validate_request

from api.binding import current_org, db, requires_scope, tenancy
from api.schemas import Envelope
from api.settings import service
from api.settings.schemas import SettingsOut, SettingsUpdate
from tenancy.transactions import after_commit

settings = Blueprint("settings", __name__, url_prefix="/settings")
Result = tuple[dict[str, Any], int]


@settings.get("")
@requires_scope("read")
@document_response(Envelope[SettingsOut])
async def get_settings() -> Result:
    """The organization's default locale and enabled locales."""
    return {"data": await service.get_settings(db(), current_org())}, 200


@settings.patch("")
@requires_scope("admin")
@validate_request(SettingsUpdate)
@document_response(Envelope[SettingsOut])
async def update_settings(data: SettingsUpdate) -> Result:
    """Change the default locale and/or the enabled locales (BCP 47 tags, canonical case).

    Removing a locale that still has translations is 409 ``locale_in_use``; the plan caps the
    number of locales, the default included (402 ``plan_limit_reached``).
    """
    changes = data.model_dump(by_alias=True, include=data.model_fields_set)
    result = await service.update_settings(db(), current_org(), changes)
    # Every process drops its cached org on the NOTIFY; this one at once, so the client's
    # next request (maybe before the NOTIFY arrives) already sees the change.
    after_commit(db(), "directory.clear", tenancy().directory.clear)
    return {"data": result}, 200
