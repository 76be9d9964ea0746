"""The API's errors: ``ServiceError`` subclasses (``tenancy/errors.py``), rendered by one handler
(``api.app``).

Body errors are ``validation_failed`` on categories and questions and ``validation_error`` on
webhooks (SPEC keeps both); ``api.app.body_error`` picks by the blueprint that served the request.
"""

from __future__ import annotations

from typing import Any

from tenancy.errors import Detail as Detail
from tenancy.errors import ServiceError as ServiceError
from tenancy.errors import ValidationFailed as ValidationFailed
from tenancy.errors import field_error as field_error

# Re-exported: the API's modules take every error they raise from here.
from tenancy.principal import InsufficientScope as InsufficientScope


class ValidationErrorCode(ServiceError):
    """SPEC's ``validation_error``: webhook bodies, reorder with foreign ids."""

    code = "validation_error"
    message = "The request is not valid."


class InvalidJson(ServiceError):
    code = "invalid_json"
    message = "The request body is not valid JSON."


class Unauthorized(ServiceError):
    status = 401
    code = "unauthorized"
    message = "A valid API key is required: send Authorization: Bearer <key>."

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message, headers={"WWW-Authenticate": "Bearer"})


class OrgNotFound(ServiceError):
    status = 404
    code = "org_not_found"
    message = "No such organization for this API key."


class NotFound(ServiceError):
    status = 404
    code = "not_found"
    message = "Not found."


class CategoryNotFound(ServiceError):
    status = 404
    code = "category_not_found"
    message = "No such category in this organization."


class CategoryReferenceNotFound(CategoryNotFound):
    """A category named inside a body (``categoryId``, ``parentId``): 400, not 404."""

    status = 400


class QuestionNotFound(ServiceError):
    status = 404
    code = "question_not_found"
    message = "No such question in this organization."


class RevisionNotFound(ServiceError):
    status = 404
    code = "revision_not_found"
    message = "No such revision of this question."


class SlugConflict(ServiceError):
    status = 409
    code = "slug_conflict"
    message = "The slug is already taken in this organization."


class CategoryNotEmpty(ServiceError):
    status = 409
    code = "category_not_empty"
    message = "The category still has questions; delete with force=true to move them."


class DefaultCategoryProtected(ServiceError):
    status = 409
    code = "default_category_protected"
    message = "The default category cannot be deleted or merged away."


class IdempotencyKeyReused(ServiceError):
    status = 422
    code = "idempotency_key_reused"
    message = "This idempotency key was used with a different request body."


class RouteNotFound(ServiceError):
    status = 404
    code = "route_not_found"
    message = "No such route."


class MethodNotAllowed(ServiceError):
    status = 405
    code = "method_not_allowed"
    message = "Method not allowed on this route."


class PayloadTooLarge(ServiceError):
    status = 413
    code = "payload_too_large"
    message = "The request body is too large."


class RateLimited(ServiceError):
    status = 429
    code = "rate_limited"
    message = "Too many requests."


class ServiceUnavailable(ServiceError):
    status = 503
    code = "service_unavailable"
    message = "The service is temporarily unavailable; retry shortly."


class InternalError(ServiceError):
    status = 500
    code = "internal_error"
    message = "An unexpected error occurred."


class WebhookInactive(ServiceError):
    status = 409
    code = "webhook_inactive"
    message = "The webhook is inactive: activate it (PATCH active: true) to send deliveries."


class TranslationNotFound(ServiceError):
    status = 404
    code = "translation_not_found"
    message = "No translation of this resource in that locale."


class LocaleInUse(ServiceError):
    status = 409
    code = "locale_in_use"
    message = "The locale still has translations; delete them before removing the locale."


class KeyNotFound(ServiceError):
    status = 404
    code = "key_not_found"
    message = "No such API key in this organization."


class LastAdminKey(ServiceError):
    status = 409
    code = "last_admin_key"
    message = "This is the organization's last active admin key: create another one first."


class PreconditionFailed(ServiceError):
    """``If-Match`` / ``If-None-Match`` failed (``api.http.conditional``): the body holds the
    resource as it is now in ``data`` (null when there is none), beside the error."""

    status = 412
    code = "precondition_failed"
    message = "The resource changed since the version named in If-Match (or If-None-Match)."

    def __init__(
        self, *, current: dict[str, Any] | None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(headers=headers)
        self.current = current

    def body(self) -> dict[str, Any]:
        return {**super().body(), "data": self.current}


class AudienceNotFound(ServiceError):
    status = 404
    code = "audience_not_found"
    message = "No audience with that id or slug in this organization."


class InvalidReaderToken(ServiceError):
    status = 401
    code = "invalid_reader_token"
    message = "The reader token is not valid for this organization."


class AudienceInUse(ServiceError):
    status = 409
    code = "audience_in_use"
    message = "Categories or questions are kept for this audience: change them first."
