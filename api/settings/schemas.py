"""Request and response models of ``/settings``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from api.schemas import RequestBody, ResponseModel

# More than CLDR has tags would only be a mistake; the plan's cap applies below this.
MAX_LOCALES = 1000


class WorkflowPatch(RequestBody):
    require_review: bool | None = None  # on needs the PRO plan (403 plan_required)


class WorkflowOut(ResponseModel):
    # Publishing needs a draft approved, as it is, by a member other than its last author.
    require_review: bool


class SettingsUpdate(RequestBody):
    default_locale: str | None = None
    locales: list[str] | None = Field(default=None, max_length=MAX_LOCALES)
    # {"enabled": bool, "title": str, "primaryColor": "#rrggbb", "externalImages": bool,
    # "headerLinks", "footerLinks", "legalText", "labels", "contactUrl", "categoryIcons",
    # "access", "signInUrl"},
    # any of them (a partial update); validated by ``api.settings.help_center`` so errors
    # name ``helpCenter.<field>``.
    help_center: dict[str, Any] | None = None
    # Issue 30: {"requireReview": bool} (``api.settings.workflow_part``).
    workflow: WorkflowPatch | None = None


class HelpCenterOut(ResponseModel):
    enabled: bool  # off by default: every /hc page is 404
    title: str  # defaults to the organization's name
    primary_color: str  # "#rrggbb"
    # Off by default: an answer's image from another host is a link to it, and the pages'
    # Content-Security-Policy allows images only from the service; on, https images show.
    external_images: bool
    # Issue 32: links of the header and the footer ({"label", "url"}), a plain legal text
    # under the footer, per-label overrides of the pages' words ({key: {locale: text}}), and
    # the uploaded logo's URL (``PUT /settings/help-center/logo``; null: none).
    header_links: list[dict[str, str]] = []
    footer_links: list[dict[str, str]] = []
    legal_text: str | None = None
    labels: dict[str, dict[str, str]] = {}
    logo_url: str | None = None
    # Issue 41: the "Still need help?" link after search results and answers (http(s); null:
    # no link).
    contact_url: str | None = None
    # Issue 41: an icon per category card of the help center's home, {categoryId: emoji}
    # (symbols, marks and joiners only; a null or "" icon drops it).
    category_icons: dict[str, str] = {}
    # Issue 39: "public" (the default) or "signed-in": a private help center, only for readers
    # who signed in (docs/audiences.md); and the org's own sign-in page (JWT sign-in; null:
    # none).
    access: Literal["public", "signed-in"] = "public"
    sign_in_url: str | None = None


class SettingsOut(ResponseModel):
    default_locale: str  # BCP 47, canonical case; one of ``locales``
    locales: list[str]  # enabled locales, canonical case, in the order they were given
    # The hosted help center (issue 16), defaults filled in; off until enabled.
    help_center: HelpCenterOut
    # The publishing workflow (issue 30), also at ``/settings/workflow``.
    workflow: WorkflowOut
