"""``POST /api/v1/{org}/questions/{idOrSlug}/votes``: "Was this helpful?" from the widget
(issue 41), or from any page of the org's own site, with a publishable key.

The help center's form (``api.helpcenter.feedback``) is HTML with a CSRF token bound to the
visitor's cookie or address, refused when sent from another site: a page on the org's own
site cannot use it. This door takes the vote as JSON with the org's publishable key (or any
key with ``read``), from the origins the key lists (``api.http.cors``: the preflight of this
view allows ``POST`` and ``Content-Type``). It writes the same vote the form writes
(``visitors.record_vote``): one per visitor per question, a second replaces the first; the
visitor is the keyed hash of (org, address) that stands for a help-center reader without a
cookie (a browser sends no cookie of ours from another site), so content analytics count
the widget's votes with the help center's. The budget per address is the form's
(``VOTES_PER_MINUTE``, one Redis counter for both doors), on top of the key's own limits.
Published questions only, for every key (404 ``question_not_found`` otherwise).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from quart import Blueprint, current_app
from quart_schema import document_response, validate_request

from api.analytics import recording
from api.audiences.visibility import reader_audiences
from api.errors import RateLimited, ValidationFailed, field_error
from api.helpcenter.access import signing_secret
from api.helpcenter.feedback import _rate_limited, _today
from api.helpcenter.reader_votes import vote_on_published
from api.helpcenter.visitors import REASON_MAX, visitor_id
from api.http.binding import client_address, current_org, db, requires_scope
from api.http.cors import preflight_allows
from api.questions.schemas import LocaleTag
from api.schemas import Envelope, RequestBody, ResponseModel

widget_votes = Blueprint("widget_votes", __name__)
CORS_METHODS = "POST"  # the preflight of this view (``api.http.cors``)
CORS_HEADERS = "Authorization, Content-Type"


class VoteIn(RequestBody):
    helpful: bool
    reason: str | None = Field(default=None, max_length=REASON_MAX)
    locale: LocaleTag | None = None


class VoteOut(ResponseModel):
    question_id: str
    helpful: bool
    locale: str


@widget_votes.post("/questions/<ref>/votes")
@requires_scope("read", public=True)
@preflight_allows(CORS_METHODS, CORS_HEADERS)
@validate_request(VoteIn)
@document_response(Envelope[VoteOut])
async def vote(ref: str, data: VoteIn) -> tuple[dict[str, Any], int]:
    """Record whether a published question helped a reader (a Yes or No vote).

    For the widget and the org's own pages, with the publishable key: one vote per reader
    (their address, hashed) and question; a second one replaces the first. ``reason`` (at
    most 500 characters) is kept with a No only. ``locale`` is the language the answer was
    read in (default: the org's default locale). 429 past 30 votes a minute from one address.
    """
    org = current_org()
    locale = data.locale or org.default_locale
    if locale not in org.locales:
        raise ValidationFailed(
            f"Locale {locale!r} is not one of this organization's locales.",
            details=field_error("locale", "not enabled"),
        )
    address = client_address()
    if await _rate_limited(address):
        raise RateLimited("Too many votes from this address.", headers={"Retry-After": "60"})
    reason = (data.reason or "").replace("\x00", "").strip() or None
    question_id = await vote_on_published(
        db(),
        ref,
        visitor=visitor_id(signing_secret(), org.id, token=None, address=address),
        helpful=data.helpful,
        reason=reason,
        locale=locale,
        audiences=reader_audiences(org),
    )
    # The org has feedback to aggregate today (buffered, no I/O here).
    recording.recorder_for(current_app.extensions).vote(org.id, _today())
    return {"data": {"questionId": question_id, "helpful": data.helpful, "locale": locale}}, 200
