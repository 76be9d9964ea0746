"""Errors are exceptions with a code and a status, rendered by one handler (``api.app``).

Body errors are ``validation_failed`` on categories and questions and ``validation_error`` on
webhooks (SPEC keeps both); ``body_error_code`` picks by the blueprint that served the request.
"""

from __future__ import annotations

from typing import Any

Detail = dict[str, str]


class ApiError(Exception):
    status = 400
    code = "bad_request"
    message = "The request could not be processed."

    def __init__(
        self,
        message: str | None = None,
        *,
        details: list[Detail] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message or self.message)
        self.message = message or self.message
        self.details = details or []
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


def field_error(field: str, issue: str) -> list[Detail]:
    return [{"field": field, "issue": issue}]


class ValidationFailed(ApiError):
    code = "validation_failed"
    message = "The request is not valid."


class ValidationErrorCode(ApiError):
    """SPEC's ``validation_error``: webhook bodies, reorder with foreign ids."""

    code = "validation_error"
    message = "The request is not valid."


class InvalidJson(ApiError):
    code = "invalid_json"
    message = "The request body is not valid JSON."


class Unauthorized(ApiError):
    status = 401
    code = "unauthorized"
    message = "A valid API key is required: send Authorization: Bearer <key>."

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message, headers={"WWW-Authenticate": "Bearer"})


class OrgNotFound(ApiError):
    status = 404
    code = "org_not_found"
    message = "No such organization for this API key."


class InsufficientScope(ApiError):
    status = 403
    code = "insufficient_scope"
    message = "The API key lacks the scope this operation requires."


class PlanRequired(ApiError):
    status = 403
    code = "plan_required"
    message = "This operation requires the STARTER plan or above."


class PlanLimitReached(ApiError):
    status = 402
    code = "plan_limit_reached"
    message = "The organization reached the cap of its plan."


class NotFound(ApiError):
    status = 404
    code = "not_found"
    message = "Not found."


class CategoryNotFound(ApiError):
    status = 404
    code = "category_not_found"
    message = "No such category in this organization."


class CategoryReferenceNotFound(CategoryNotFound):
    """A category named inside a body (``categoryId``, ``parentId``): 400, not 404."""

    status = 400


class QuestionNotFound(ApiError):
    status = 404
    code = "question_not_found"
    message = "No such question in this organization."


class RevisionNotFound(ApiError):
    status = 404
    code = "revision_not_found"
    message = "No such revision of this question."


class SlugConflict(ApiError):
    status = 409
    code = "slug_conflict"
    message = "The slug is already taken in this organization."


class CategoryNotEmpty(ApiError):
    status = 409
    code = "category_not_empty"
    message = "The category still has questions; delete with force=true to move them."


class DefaultCategoryProtected(ApiError):
    status = 409
    code = "default_category_protected"
    message = "The default category cannot be deleted or merged away."


class IdempotencyKeyReused(ApiError):
    status = 422
    code = "idempotency_key_reused"
    message = "This idempotency key was used with a different request body."


class RouteNotFound(ApiError):
    status = 404
    code = "route_not_found"
    message = "No such route."


class MethodNotAllowed(ApiError):
    status = 405
    code = "method_not_allowed"
    message = "Method not allowed on this route."


class PayloadTooLarge(ApiError):
    status = 413
    code = "payload_too_large"
    message = "The request body is too large."


class RateLimited(ApiError):
    status = 429
    code = "rate_limited"
    message = "Too many requests."


class ServiceUnavailable(ApiError):
    status = 503
    code = "service_unavailable"
    message = "The service is temporarily unavailable; retry shortly."


class InternalError(ApiError):
    status = 500
    code = "internal_error"
    message = "An unexpected error occurred."


class WebhookInactive(ApiError):
    status = 409
    code = "webhook_inactive"
    message = "The webhook is inactive: activate it (PATCH active: true) to send deliveries."
