"""Errors of ``/members`` (rendered by ``api.app`` like every ``ServiceError``)."""

from __future__ import annotations

from api.errors import ServiceError


class MemberNotFound(ServiceError):
    status = 404
    code = "member_not_found"
    message = "No such member in this organization."


class MemberEmailTaken(ServiceError):
    status = 409
    code = "member_email_taken"
    message = "An active member of this organization already has this email."


class MemberDeactivated(ServiceError):
    status = 409
    code = "member_deactivated"
    message = "The member is deactivated; it cannot be changed."
