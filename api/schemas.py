"""Shared pieces of request and response models: strict JSON types, camelCase, envelopes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import (
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


def _require_string(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 timestamp string with an offset or Z")
    return value


# An ISO 8601 string with an explicit offset or Z; a naive time or a number is refused.
Timestamp = Annotated[AwareDatetime, Strict(False), BeforeValidator(_require_string)]


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
    ids: list[Annotated[str, Field(max_length=64)]] = Field(min_length=1, max_length=1000)


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
