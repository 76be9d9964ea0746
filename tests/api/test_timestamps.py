"""Timestamp inputs (CONTRACT section 2): ISO 8601 with an explicit offset or Z, nothing else."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import TypeAdapter, ValidationError

from api.schemas import Timestamp

TIMESTAMP = TypeAdapter(Timestamp)


@pytest.mark.parametrize(
    "value",
    ["2030-01-01T00:00:00Z", "2030-01-01T02:00:00.000+02:00", "2030-01-01 00:00:00Z"],
)
def test_iso_timestamps_with_an_offset_are_taken(value: str) -> None:
    assert TIMESTAMP.validate_python(value) == datetime(2030, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "value",
    [
        "2030-01-01T00:00:00",  # naive
        "2030-01-01",  # a date, no time
        "1893456000",  # Unix seconds as text: not ISO 8601
        "1893456000.5",
        1893456000,
        None,
    ],
)
def test_anything_else_is_refused(value: object) -> None:
    with pytest.raises(ValidationError):
        TIMESTAMP.validate_python(value)
