"""Request and response models of ``/settings``."""

from __future__ import annotations

from pydantic import Field

from api.schemas import RequestBody, ResponseModel

# More than CLDR has tags would only be a mistake; the plan's cap applies below this.
MAX_LOCALES = 1000


class SettingsUpdate(RequestBody):
    default_locale: str | None = None
    locales: list[str] | None = Field(default=None, max_length=MAX_LOCALES)


class SettingsOut(ResponseModel):
    default_locale: str  # BCP 47, canonical case; one of ``locales``
    locales: list[str]  # enabled locales, canonical case, in the order they were given
