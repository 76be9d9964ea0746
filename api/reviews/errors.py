"""Errors of drafts and reviews (issue 30)."""

from __future__ import annotations

from typing import Any

from api.errors import ServiceError


class DraftNotFound(ServiceError):
    status = 404
    code = "draft_not_found"
    message = "The question has no draft."


class DraftConflict(ServiceError):
    """The question changed after the draft was started: both versions in the body."""

    status = 409
    code = "draft_conflict"
    message = (
        "The question was changed after this draft was started; compare the two versions and"
        " publish again with force: true to apply the draft anyway."
    )

    def __init__(self, live: dict[str, Any], draft: dict[str, Any]) -> None:
        super().__init__()
        self.live = live
        self.draft = draft

    def body(self) -> dict[str, Any]:
        body = super().body()
        body["error"]["live"] = self.live
        body["error"]["draft"] = self.draft
        return body


class ReviewRequired(ServiceError):
    status = 403
    code = "review_required"
    message = (
        "This organization requires review: only a draft approved by another member, exactly"
        " as it is, can be published."
    )


class SelfApproval(ServiceError):
    status = 403
    code = "self_approval"
    message = "The last author of a draft cannot approve it: another member must."


class MemberRequired(ServiceError):
    status = 403
    code = "member_required"
    message = "Only a member's key can approve or reject (a key of no member is no one)."


class DraftChanged(ServiceError):
    status = 409
    code = "draft_changed"
    message = "The draft changed since the version given; read it again before deciding."
