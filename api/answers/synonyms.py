"""The org's synonyms: groups of words or phrases that mean the same in one locale
(``["refund", "money back", "chargeback"]``). A query that says one member also looks for the
others (``terms.matched_synonyms``), in ``/answers`` and the help center's search.

``PUT /synonyms`` replaces a locale's groups. Members are trimmed and de-duplicated (case and
accents folded); each group keeps 2 to ``MAX_MEMBERS`` members that name at least one
searchable word; the number of groups per locale is capped by the plan
(``billing.plans.Caps.synonym_groups``; past it, 402 ``plan_limit_reached``).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from api.answers import lexicon
from api.answers.models import SynonymSet
from api.answers.terms import SynonymIndex, words_of
from api.errors import ValidationFailed, field_error
from api.search import fold
from billing.errors import PlanLimitReached
from billing.plans import Plan, caps_for
from tenancy.audit import audit_settings
from tenancy.clock import iso, utcnow
from tenancy.db import org_path, read_records
from tenancy.principal import Principal

MAX_MEMBERS = 20
MAX_MEMBER_CHARS = 100

_STAMP_SQL = "SELECT updated_at, lexicon_off FROM synonyms WHERE locale = $1"
_GROUPS_SQL = "SELECT groups, lexicon_off, updated_at FROM synonyms WHERE locale = $1"
INDEX_CACHE_BYTES = 32 * 2**20  # folded groups of every (org, locale), this process
FOLD_ON_LOOP = 200  # groups folded on the event loop; more are folded in a thread


class SynonymIndexes:
    """``(org schema, locale) -> (updated_at, SynonymIndex)``, at most ``max_bytes`` of
    indexes (``SynonymIndex.size``); the least recently used go first. An entry serves while
    the row's ``updated_at`` is the one it was folded from."""

    def __init__(self, max_bytes: int = INDEX_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[tuple[str, str], tuple[datetime, SynonymIndex]] = OrderedDict()

    def get(self, key: tuple[str, str], stamp: datetime) -> SynonymIndex | None:
        held = self._entries.get(key)
        if held is None or held[0] != stamp:
            return None
        self._entries.move_to_end(key)
        return held[1]

    def put(self, key: tuple[str, str], stamp: datetime, index: SynonymIndex) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old[1].size
        if index.size > self.max_bytes:
            return
        self._entries[key] = (stamp, index)
        self.bytes += index.size
        while self.bytes > self.max_bytes:
            _, (_, evicted) = self._entries.popitem(last=False)
            self.bytes -= evicted.size


_indexes = SynonymIndexes()


@lru_cache(maxsize=256)
def lexicon_index(locale: str, off: frozenset[str] = frozenset()) -> SynonymIndex:
    """The support lexicon of ``locale``'s language without the groups ``off``, folded (an
    org without synonyms of its own uses it as it is)."""
    groups = [g for g in lexicon.groups_for(locale) if g.id not in off]
    return SynonymIndex.of(
        [list(g.members) for g in groups if g.id != lexicon.IGNORED],
        [m for g in groups if g.id == lexicon.IGNORED for m in g.members],
    )


def _off(value: Any) -> frozenset[str]:
    return (
        frozenset(v for v in value if isinstance(v, str))
        if isinstance(value, list)
        else frozenset()
    )


def _combined(groups: list[list[str]], locale: str, off: frozenset[str]) -> SynonymIndex:
    """The org's groups, then the lexicon's that are on."""
    built = lexicon_index(locale, off)
    own = SynonymIndex.of(groups)
    if not own.groups:
        return built
    return SynonymIndex.of([*groups, *built.groups], sorted(built.ignored))


async def index_for(session: AsyncSession, locale: str) -> SynonymIndex:
    """The org's synonym groups of ``locale`` and the support lexicon's groups it has not
    switched off, folded: from this process's cache while the row is unchanged (a read of its
    ``updated_at``), else read and folded again (off the event loop when large). Without a
    row: the whole lexicon."""
    rows = await read_records(session, _STAMP_SQL, locale)
    if not rows:
        return lexicon_index(locale)
    key = (org_path(session), locale)
    cached = _indexes.get(key, rows[0]["updated_at"])
    if cached is not None:
        return cached
    rows = await read_records(session, _GROUPS_SQL, locale)
    if not rows:
        return lexicon_index(locale)
    groups = rows[0]["groups"] if isinstance(rows[0]["groups"], list) else []
    off = _off(rows[0]["lexicon_off"])
    if len(groups) > FOLD_ON_LOOP:
        index = await asyncio.to_thread(_combined, groups, locale, off)
    else:
        index = _combined(groups, locale, off)
    _indexes.put(key, rows[0]["updated_at"], index)
    return index


def normalised(groups: list[list[str]]) -> list[list[str]]:
    """Each group trimmed and without repeats; a member without a word, or a group of fewer
    than two members, is a validation error naming it."""
    out: list[list[str]] = []
    for index, group in enumerate(groups):
        seen: set[str] = set()
        members: list[str] = []
        for member in group:
            text = " ".join(member.split())
            if not 1 <= len(text) <= MAX_MEMBER_CHARS or not words_of(text):
                raise ValidationFailed(
                    f"Each synonym is 1 to {MAX_MEMBER_CHARS} characters with a word.",
                    details=field_error(f"groups[{index}]", "has an empty or too long member"),
                )
            key = fold(text)
            if key not in seen:
                seen.add(key)
                members.append(text)
        if not 2 <= len(members) <= MAX_MEMBERS:
            raise ValidationFailed(
                f"A synonym group has 2 to {MAX_MEMBERS} different members.",
                details=field_error(f"groups[{index}]", f"2 to {MAX_MEMBERS} different members"),
            )
        out.append(members)
    return out


def _locale_of(org: Principal, locale: str | None) -> str:
    chosen = locale or org.default_locale
    if chosen not in org.locales:
        raise ValidationFailed(
            "locale is not one of the organization's enabled locales.",
            details=field_error("locale", "not an enabled locale"),
        )
    return chosen


async def get_synonyms(session: AsyncSession, org: Principal, locale: str | None) -> dict[str, Any]:
    chosen = _locale_of(org, locale)
    row = await _row(session, chosen)
    return public(chosen, row.groups if row else [], iso(row.updated_at) if row else None)


async def _row(session: AsyncSession, locale: str) -> SynonymSet | None:
    return (
        await session.execute(select(SynonymSet).where(SynonymSet.locale == locale))
    ).scalar_one_or_none()


async def put_synonyms(
    session: AsyncSession, org: Principal, locale: str | None, groups: list[list[str]]
) -> dict[str, Any]:
    chosen = _locale_of(org, locale)
    clean = normalised(groups)
    cap = caps_for(Plan(org.plan)).synonym_groups
    if len(clean) > cap:
        raise PlanLimitReached(
            f"The {org.plan} plan allows {cap} synonym groups per locale.",
            details=field_error("groups", f"at most {cap} groups"),
        )
    before = await _row(session, chosen)
    now = utcnow()
    statement = insert(SynonymSet).values(locale=chosen, groups=clean, updated_at=now)
    statement = statement.on_conflict_do_update(
        index_elements=[SynonymSet.locale],
        set_={"groups": statement.excluded.groups, "updated_at": statement.excluded.updated_at},
    )
    await session.execute(statement)
    old = before.groups if before is not None else []
    if old != clean:
        await audit_settings(
            session, org.id, org.actor, {"synonyms": {chosen: old}}, {"synonyms": {chosen: clean}}
        )
    return public(chosen, clean, iso(now))


def public(locale: str, groups: list[list[str]], updated_at: str | None) -> dict[str, Any]:
    return {"locale": locale, "groups": groups, "updatedAt": updated_at}


# ---- the support lexicon's switches (``GET`` / ``PUT /synonyms/lexicon``) -------------------


def lexicon_public(locale: str, off: frozenset[str], updated_at: str | None) -> dict[str, Any]:
    return {
        "locale": locale,
        "language": lexicon.language_of(locale),
        "groups": [
            {"id": g.id, "members": list(g.members), "enabled": g.id not in off}
            for g in lexicon.groups_for(locale)
        ],
        "disabled": sorted(off & lexicon.ids_for(locale)),
        "updatedAt": updated_at,
    }


async def get_lexicon(session: AsyncSession, org: Principal, locale: str | None) -> dict[str, Any]:
    chosen = _locale_of(org, locale)
    row = await _row(session, chosen)
    off = _off(row.lexicon_off) if row is not None else frozenset()
    return lexicon_public(chosen, off, iso(row.updated_at) if row else None)


async def put_lexicon(
    session: AsyncSession, org: Principal, locale: str | None, disabled: list[str]
) -> dict[str, Any]:
    """Switch off exactly the groups ``disabled`` of the lexicon in ``locale`` (the others
    on); an id the lexicon has not in that language is ``validation_failed`` naming it."""
    chosen = _locale_of(org, locale)
    known = lexicon.ids_for(chosen)
    for index, group_id in enumerate(disabled):
        if group_id not in known:
            raise ValidationFailed(
                "disabled names a group the support lexicon does not have in this locale.",
                details=field_error(f"disabled[{index}]", "not a group of the lexicon"),
            )
    off = sorted(set(disabled))
    before = await _row(session, chosen)
    old = sorted(_off(before.lexicon_off)) if before is not None else []
    now = utcnow()
    statement = insert(SynonymSet).values(locale=chosen, groups=[], lexicon_off=off, updated_at=now)
    statement = statement.on_conflict_do_update(
        index_elements=[SynonymSet.locale],
        set_={
            "lexicon_off": statement.excluded.lexicon_off,
            "updated_at": statement.excluded.updated_at,
        },
    )
    await session.execute(statement)
    if old != off:
        await audit_settings(
            session, org.id, org.actor, {"lexiconOff": {chosen: old}}, {"lexiconOff": {chosen: off}}
        )
    return lexicon_public(chosen, frozenset(off), iso(now))
