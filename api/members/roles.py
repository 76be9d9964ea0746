"""Roles of members and the scopes each allows (issue 30): viewer reads; author reads and
writes; editor also reviews; admin has every scope. A member's key never holds more."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from tenancy.keys import PUBLIC, REVIEW

Role = Literal["viewer", "author", "editor", "admin"]
ROLES: tuple[Role, ...] = ("viewer", "author", "editor", "admin")
ALLOWED: dict[str, frozenset[str]] = {
    "viewer": frozenset({"read"}),
    "author": frozenset({"read", "write"}),
    "editor": frozenset({"read", "write", REVIEW}),
    "admin": frozenset({"read", "write", REVIEW, "admin"}),
}
# What each scope grants (admin includes write and review, write and review include read:
# ``tenancy.keys.grants``).
_GRANTED: dict[str, frozenset[str]] = {
    "read": frozenset({"read"}),
    "write": frozenset({"read", "write"}),
    REVIEW: frozenset({REVIEW, "read"}),
    "admin": ALLOWED["admin"],
    PUBLIC: frozenset({PUBLIC}),
}


def granted(scopes: Sequence[str]) -> frozenset[str]:
    out: frozenset[str] = frozenset()
    for scope in scopes:
        out |= _GRANTED.get(scope, frozenset())
    return out


def exceeding(scopes: Sequence[str], role: str) -> list[str]:
    """The scopes of ``scopes`` that grant more than ``role`` allows."""
    return [s for s in scopes if not _GRANTED.get(s, frozenset({s})) <= ALLOWED[role]]


def capped(scopes: Sequence[str], role: str) -> list[str]:
    """``scopes`` reduced to what ``role`` allows, in the fewest names (a key of a member
    whose role was lowered keeps what the new role still grants)."""
    kept = granted(scopes) & ALLOWED[role]
    if "admin" in kept:
        return ["admin"]
    out = ["write"] if "write" in kept else ["read"] if "read" in kept else []
    if REVIEW in kept:
        out.append(REVIEW)
    return out or ["read"]
