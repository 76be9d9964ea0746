"""Binds a request made with a member's key to its member (issue 30), after
``api.binding.bind_request_to_org``: ``g.org`` becomes a ``MemberOrgContext``.

A key's member never changes (it is set when the key is made): the directory reads it with the
key (``KeyRecord.member_id``), so binding a member costs no query, and a write's transaction
touches the org's schema only; a deactivated member's keys are revoked, and a lowered role
lowers their scopes, both announced like any key change (``tenancy.directory``)."""

from __future__ import annotations

from quart import g, request

from api.members.context import with_member

READS = frozenset({"GET", "HEAD", "OPTIONS"})


async def bind_member() -> None:
    org = g.get("org")
    # Reads record no actor.
    if org is None or request.method in READS:
        return
    g.org = with_member(org, g.get("key_member_id"))
