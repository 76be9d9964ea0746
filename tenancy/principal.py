"""Who acts: the one typed principal every way in turns its credentials into (STYLE 11).

A route, the fast path, an MCP tool, a help-center page, the CLI and a job each authenticate
once (``api.http.authentication.authenticate`` for keys; ``system`` and ``job`` for the service
itself) and hand the same ``Principal`` to the domain commands, which decide with it: its
scopes (``may``/``require``), its member (four eyes: ``author``), and the actor recorded in
audit entries, revisions and drafts (``actor``). No door decides for a command.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tenancy.audit import Actor, api_key_actor, member_actor, system_actor
from tenancy.errors import ServiceError
from tenancy.keys import grants, is_public


class InsufficientScope(ServiceError):
    status = 403
    code = "insufficient_scope"
    message = "The API key lacks the scope this operation requires."


@dataclass(frozen=True)
class Reader:
    """A reader the org's own application signed in (issue 39: a verified reader token, sent
    beside a publishable key): who, and the audiences (slugs) the token grants."""

    sub: str
    audiences: tuple[str, ...] = ()
    email: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class Principal:
    """The org acted on and who acts on it: a key (secret or publishable), a member's key
    (``member_id``), the service itself (``acting``: a system actor such as the
    scheduler, the CLI), or a job acting as the principal that started it."""

    id: str  # the org's
    slug: str
    plan: str  # a plan name; ``billing.plans.Plan`` knows what it allows
    schema_name: str
    key_fingerprint: str
    scopes: tuple[str, ...]
    default_locale: str = "en"  # BCP 47, canonical case; one of ``locales``
    locales: tuple[str, ...] = ("en",)
    # The member a key belongs to (issue 30). Its role is not kept here: a member's key holds
    # no scope beyond the role's (capped under the member's lock at every role change).
    member_id: str | None = None
    acting: tuple[tuple[str, str], ...] = ()  # a recorded actor: the system's, a job's
    reader: Reader | None = None  # a publishable key's signed-in reader (issue 39)

    @property
    def actor(self) -> Actor:
        """Who audit entries, revisions and drafts name."""
        if self.acting:
            return dict(self.acting)
        if self.member_id is not None:
            return member_actor(self.member_id, self.key_fingerprint)
        return api_key_actor(self.key_fingerprint)

    @property
    def author(self) -> str:
        """Who made a change, for the four-eyes rule: the member, else the key (a job acts
        as the member or key that started it)."""
        if self.member_id is not None:
            return self.member_id
        if self.acting:
            acting = dict(self.acting)
            return acting.get("id", "") if acting.get("type") == "member" else self.key_fingerprint
        return self.key_fingerprint

    @property
    def public(self) -> bool:
        """A publishable key: published content only, no writes."""
        return is_public(self.scopes)

    def may(self, scope: str) -> bool:
        return grants(self.scopes, scope)

    def require(self, scope: str) -> None:
        """403 ``insufficient_scope`` unless the principal holds ``scope``."""
        if not grants(self.scopes, scope):
            raise InsufficientScope(f"This operation requires the {scope!r} scope.")

    def acting_as(self, actor: Actor) -> Principal:
        """The same principal recording ``actor`` (a job acting as who started it); a
        member's actor keeps the member for the four-eyes rule."""
        member = actor.get("id") if actor.get("type") == "member" else self.member_id
        return dataclasses.replace(self, acting=tuple(sorted(actor.items())), member_id=member)


def system(
    org_id: str,
    schema_name: str,
    name: str,
    *,
    slug: str = "",
    plan: str = "FREE",
    default_locale: str = "en",
    locales: tuple[str, ...] = ("en",),
) -> Principal:
    """The service acting for an org on its own (the scheduler, Stripe, the CLI): every
    scope, recorded as ``{"type": "system", "id": name}``."""
    return Principal(
        org_id,
        slug,
        plan,
        schema_name,
        "",
        ("admin",),
        default_locale,
        locales,
        acting=tuple(sorted(system_actor(name).items())),
    )
