"""The error base: an exception with a code, a status and details, and nothing of HTTP.

Every layer raises subclasses of ``ServiceError``; the API renders any of them as
``{"error": {"code", "message", "details": [{"field", "issue"}]}}`` with ``status``
(``api/app.py``). Workers and the CLI see the same exceptions as plain errors.
"""

from __future__ import annotations

from typing import Any

Detail = dict[str, str]


class ServiceError(Exception):
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


class ValidationFailed(ServiceError):
    code = "validation_failed"
    message = "The request is not valid."
