"""Shared pieces of request and response models: strict JSON types, camelCase, envelopes."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
)
from pydantic.alias_generators import to_camel

from api.errors import Detail

# A date and a time of day: pydantic alone would also take "1893456000" (Unix seconds).
_ISO_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


def _require_string(value: Any) -> Any:
    if not isinstance(value, str) or _ISO_DATE_TIME.match(value) is None:
        raise ValueError("must be an ISO 8601 timestamp string with an offset or Z")
    return value


def _in_utc(value: datetime) -> datetime:
    """The time in UTC, so one instant is one value however its offset was spelled (idempotency
    compares bodies). Its UTC form must be a real date (years 1..9999):
    ``0001-01-01T00:00:00+01:00`` is not, and is a validation error, not a database failure."""
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("out of range") from None


# An ISO 8601 string with an explicit offset or Z, as a UTC datetime; a naive time, a number
# or a time outside years 1..9999 in UTC is refused.
Timestamp = Annotated[
    AwareDatetime, Strict(False), BeforeValidator(_require_string), AfterValidator(_in_utc)
]


class RequestBody(BaseModel):
    """JSON bodies: camelCase fields, no unknown or read-only fields, no type coercion."""

    model_config = ConfigDict(
        extra="forbid", strict=True, alias_generator=to_camel, populate_by_name=False
    )

    def sent(self) -> dict[str, Any]:
        """The fields the client actually sent, by their Python names."""
        return {name: getattr(self, name) for name in self.model_fields_set}


class QueryArgs(BaseModel):
    """Query strings arrive as text: numbers and booleans are parsed; unknown names refused."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=False)


class ResponseModel(BaseModel):
    """Documents a response shape in OpenAPI (handlers build the dicts themselves)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class PaginationMeta(ResponseModel):
    limit: int
    cursor: str | None
    has_more: bool


class ListMeta(ResponseModel):
    pagination: PaginationMeta


T = TypeVar("T")


class Envelope(ResponseModel, Generic[T]):
    data: T


class ListEnvelope(ResponseModel, Generic[T]):
    data: list[T]
    meta: ListMeta


class ErrorDetail(ResponseModel):
    field: str
    issue: str


class ErrorInfo(ResponseModel):
    code: str
    message: str
    details: list[ErrorDetail]


class ErrorBody(ResponseModel):
    error: ErrorInfo


class IdsBody(RequestBody):
    # Any string is a candidate id: one naming no resource of the org is the service's
    # ``validation_error`` (SPEC), not a shape error.
    ids: list[str] = Field(min_length=1, max_length=1000)


class UpdatedCount(ResponseModel):
    updated: int


def pydantic_details(error: ValidationError) -> list[Detail]:
    """Turn pydantic's errors into the contract's details, naming fields as the client sent."""
    details: list[Detail] = []
    for item in error.errors(include_url=False):
        loc = item.get("loc", ())
        field = str(loc[0]) if loc else "body"
        kind = item.get("type", "")
        if kind == "extra_forbidden":
            issue = "unknown or read-only field"
        elif kind == "missing":
            issue = "required"
        elif not loc and kind in {"model_type", "dict_type", "model_attributes_type"}:
            issue = "the body must be a JSON object"
        else:
            issue = item.get("msg", "invalid")
        details.append({"field": field, "issue": issue})
    return details


def utc(value: datetime) -> datetime:
    """Normalize an aware datetime for storage."""
    from datetime import UTC

    return value.astimezone(UTC)


# Audience slugs a category or question is kept for (issue 39): empty, everyone; each must
# name a live audience of the org (``api.audiences.service.checked_audiences``).
AudienceList = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=100)]], Field(max_length=20)
]
