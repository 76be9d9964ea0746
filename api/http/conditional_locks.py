"""The row locks a conditional write takes before it compares ``If-Match`` (issue 30).

A lock is taken in the request's transaction before the resource is read and compared, and
held until that transaction ends, so the comparison and the write are one step: a concurrent
write of the same resource waits, then compares against what the first one committed (412).
Each lock is the one the resource's service takes first (``FOR UPDATE`` on the row; the org
row ``FOR NO KEY UPDATE``, never ``FOR UPDATE``: see ``api/settings/service.py``), so taking
it earlier adds no new lock order. A lock finds its row from the route's arguments (an id, or
for resources that have one a slug), so the resource is read once, under the lock.

A lock may also give the resource's current body, byte for byte what its ``GET`` would answer
in the request's ``locale``, when the row it loaded holds all of it (a question in its own
locale: ``QUESTION``); otherwise it gives None and the ``GET`` view is read (issue 40: a
conditional PATCH costs one statement less).

A new resource names its row: ``row(Model, "<route argument>", "<id prefix>")``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from api.audiences.models import Audience
from api.categories.models import Category
from api.errors import QuestionNotFound
from api.members.models import Member
from api.questions.models import Question
from api.questions.queries import load_locked as load_question
from api.questions.read_json import question_body
from api.translations.models import CategoryTranslation, QuestionTranslation
from api.webhooks.models import Webhook
from tenancy.ids import looks_like_id
from tenancy.models import Organization
from tenancy.principal import Principal

# (session, principal, the route's arguments, the locale its GET serves) -> the GET's body
# when the lock could build it, else None.
Lock = Callable[[AsyncSession, Principal, Mapping[str, Any], str | None], Awaitable[bytes | None]]


def _ref_of(model: Any, prefix: str, ref: str) -> ColumnElement[bool]:
    """The live row an id (``prefix_…``) or, for a model with slugs, a slug names."""
    by_id = looks_like_id(ref, prefix) or not hasattr(model, "slug")
    where: ColumnElement[bool] = model.id == ref if by_id else model.slug == ref
    if hasattr(model, "deleted_at"):
        where = where & model.deleted_at.is_(None)
    return where


def row(model: Any, arg: str, prefix: str) -> Lock:
    """``FOR UPDATE`` on the row of ``model`` the route's argument ``arg`` names."""

    async def lock(
        session: AsyncSession, _org: Principal, args: Mapping[str, Any], _locale: str | None
    ) -> None:
        ref = str(args.get(arg, ""))
        await session.execute(select(model.id).where(_ref_of(model, prefix, ref)).with_for_update())
        return None

    return lock


async def org_row(
    session: AsyncSession, org: Principal, _args: Mapping[str, Any], _locale: str | None = None
) -> None:
    """The org's row ``FOR NO KEY UPDATE``: what a settings PATCH and translation writers
    take first (``api.settings.service``)."""
    await session.execute(
        select(Organization.id).where(Organization.id == org.id).with_for_update(key_share=True)
    )
    return None


def translation(owner: Any, prefix: str, model: Any, owner_column: Any) -> Lock:
    """The org row (as translation writers take it first), then the translation row of the
    owner the route's ``ref`` names in its ``locale`` (tags compare case-insensitively)."""

    async def lock(
        session: AsyncSession, org: Principal, args: Mapping[str, Any], _locale: str | None
    ) -> None:
        await org_row(session, org, args)
        owner_id = select(owner.id).where(_ref_of(owner, prefix, str(args.get("ref", ""))))
        locale = str(args.get("locale", "")).lower()
        await session.execute(
            select(model.locale)
            .where(owner_column == owner_id.scalar_subquery(), func.lower(model.locale) == locale)
            .with_for_update()
        )
        return None

    return lock


async def _question(
    session: AsyncSession, _org: Principal, args: Mapping[str, Any], locale: str | None
) -> bytes | None:
    """The question's row, locked and loaded as its commands load it (``queries.load``): the
    write that follows takes no second lock. Served in its own locale, its body is built from
    that row (a translation is never in its question's own locale)."""
    try:
        question, draft = await load_question(session, str(args.get("ref", "")))
    except QuestionNotFound:
        return None  # the GET that follows answers 404
    return question_body(question, draft) if locale == question.locale else None


QUESTION = _question
CATEGORY = row(Category, "ref", "cat")
WEBHOOK = row(Webhook, "webhook_id", "wh")
AUDIENCE = row(Audience, "ref", "aud")
MEMBER = row(Member, "member_id", "mem")
SETTINGS = org_row
QUESTION_TRANSLATION = translation(
    Question, "q", QuestionTranslation, QuestionTranslation.question_id
)
CATEGORY_TRANSLATION = translation(
    Category, "cat", CategoryTranslation, CategoryTranslation.category_id
)
