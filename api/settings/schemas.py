"""Request and response models of ``/settings``."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from api.schemas import RequestBody, ResponseModel

# More than CLDR has tags would only be a mistake; the plan's cap applies below this.
MAX_LOCALES = 1000


class SettingsUpdate(RequestBody):
    default_locale: str | None = None
    locales: list[str] | None = Field(default=None, max_length=MAX_LOCALES)
    # {"enabled": bool, "title": str, "primaryColor": "#rrggbb", "externalImages": bool}, any
    # of them (a partial update); validated by ``api.settings.help_center`` so errors name
    # ``helpCenter.<field>``.
    help_center: dict[str, Any] | None = None


class HelpCenterOut(ResponseModel):
    enabled: bool  # off by default: every /hc page is 404
    title: str  # defaults to the organization's name
    primary_color: str  # "#rrggbb"
    # Off by default: an answer's image from another host is a link to it, and the pages'
    # Content-Security-Policy allows images only from the service; on, https images show.
    external_images: bool


class SettingsOut(ResponseModel):
    default_locale: str  # BCP 47, canonical case; one of ``locales``
    locales: list[str]  # enabled locales, canonical case, in the order they were given
    # The hosted help center (issue 16), defaults filled in; off until enabled.
    help_center: HelpCenterOut
