"""Public ids: a resource prefix and an upper-case ULID (``q_01JD...``)."""

from __future__ import annotations

from ulid import ULID

# imp, exp: import and export jobs (issue 29).
PREFIXES = frozenset({"org", "cat", "q", "wh", "dlv", "rev", "aud", "evt", "mem", "imp", "exp"})


def new_id(prefix: str) -> str:
    assert prefix in PREFIXES, prefix
    return f"{prefix}_{ULID()}"


def looks_like_id(value: str, prefix: str) -> bool:
    """True for a well-formed id of that prefix (the database still decides if it exists)."""
    head, sep, tail = value.partition("_")
    return sep == "_" and head == prefix and len(tail) == 26 and tail.isalnum() and tail.isupper()
