"""The org context of a request made with a member's key (issue 30): the same context, with
the member, whose actor is ``{"type": "member", "id": "mem_…", "keyFingerprint": …}``
everywhere a change is recorded (audit logs, revisions, drafts)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tenancy.audit import Actor, member_actor
from tenancy.context import OrgContext


@dataclass(frozen=True)
class MemberOrgContext(OrgContext):
    member_id: str = ""

    @property
    def actor(self) -> Actor:
        return member_actor(self.member_id, self.key_fingerprint)


def with_member(org: OrgContext, member_id: str | None) -> OrgContext:
    if member_id is None:
        return org
    fields = {f.name: getattr(org, f.name) for f in dataclasses.fields(org)}
    return MemberOrgContext(**fields, member_id=member_id)


def member_of(org: OrgContext) -> str | None:
    """The member acting, or None for a key of no member (or the system)."""
    return org.member_id if isinstance(org, MemberOrgContext) else None


def author_of(org: OrgContext) -> str:
    """Who made a change, for the four-eyes rule: the member, else the key."""
    return member_of(org) or org.key_fingerprint
