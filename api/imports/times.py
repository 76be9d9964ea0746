"""When the source says an item was made and last changed: kept as the question's or
category's ``createdAt``/``updatedAt`` (issue 41), instead of the time of the import.

Accepted: ISO 8601 text (Zendesk, Help Scout, CSV, our bundle; a time without an offset is
UTC), Unix seconds (Intercom), a YAML date or time (Markdown front matter). A value that is
none of these, or more than a day ahead of now, is left out with a warning of its item (the
import's time is kept). An update time before the creation time is the creation time."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from api.imports.items import CategoryItem, Note, QuestionItem, TranslationItem
from tenancy.clock import utcnow

SKEW = dt.timedelta(days=1)  # clocks differ; a time further ahead is not a past change
EARLIEST = dt.datetime(1970, 1, 2, tzinfo=dt.UTC)


def source_time(value: Any) -> dt.datetime | None:
    """``value`` as an aware time; None when it is none; ValueError when it is not a time."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int | float | Decimal):
        found = dt.datetime.fromtimestamp(float(value), dt.UTC)
    elif isinstance(value, dt.datetime):
        found = value
    elif isinstance(value, dt.date):
        found = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if len(text) > 64:
            raise ValueError(value)
        found = dt.datetime.fromisoformat(text)
    else:
        raise ValueError(value)
    if found.tzinfo is None:
        found = found.replace(tzinfo=dt.UTC)
    if found < EARLIEST or found > utcnow() + SKEW:
        raise ValueError(value)
    return found


def keep_times(
    item: CategoryItem | QuestionItem | TranslationItem, created: Any, updated: Any
) -> None:
    """The source's ``created``/``updated`` values on ``item``; a value that is no time is a
    warning of the item."""
    times: list[dt.datetime | None] = []
    for name, value in (("createdAt", created), ("updatedAt", updated)):
        try:
            times.append(source_time(value))
        except (ValueError, OverflowError, OSError):
            shown = str(value)[:64]
            item.notes.append(Note(item.source, name, f"{shown!r} is not a time: import time kept"))
            times.append(None)
    item.created_at, item.updated_at = times
    if item.created_at is not None and item.updated_at is not None:
        item.updated_at = max(item.updated_at, item.created_at)
