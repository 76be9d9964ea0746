"""The org's locales (issue 15): ``defaultLocale`` and ``locales`` live on
``shared.organizations``; the directory caches them per process and drops them on
``notify_tenancy_changed``, so every process serves a change on its next request.

A PATCH locks the org row ``FOR NO KEY UPDATE``; translation writers take the same lock on it
(``ensure_locale_enabled``; the two conflict) and check their locale against the row, so a
translation never lands in a locale a concurrent PATCH removes, and a removal never leaves a
translation behind. Never ``FOR UPDATE``: a change audited in the org's log marks the org in
``shared.outbox_pending`` from another connection before it commits, whose foreign key check
takes ``FOR KEY SHARE`` on this row, which ``FOR UPDATE`` would make wait for ever.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, union, update
from sqlalchemy.ext.asyncio import AsyncSession

from api.categories.models import Category
from api.errors import LocaleInUse, ValidationFailed, field_error
from api.locales import canonical_tag
from api.questions.models import Question
from api.settings import help_center
from api.translations.models import CategoryTranslation, QuestionTranslation
from billing.errors import PlanLimitReached
from billing.plans import Plan, cap_of
from tenancy.audit import audit_settings, record_audit
from tenancy.generations import note_write
from tenancy.keys import notify_tenancy_changed
from tenancy.models import Organization
from tenancy.principal import Principal
from tenancy.transactions import once_per_transaction

AUDIT_ACTION = "settings_changed"  # the category-era ``audit_log`` (resource "organization")


def _public(default_locale: str, locales: list[str], hc: dict[str, Any]) -> dict[str, Any]:
    return {"defaultLocale": default_locale, "locales": list(locales), help_center.FIELD: hc}


def _help_center(stored: dict[str, Any] | None, name: str, slug: str = "") -> dict[str, Any]:
    """The public help center settings, defaults filled in (off until enabled)."""
    return help_center.public(stored, name, slug)


async def get_settings(session: AsyncSession, org: Principal) -> dict[str, Any]:
    row = (
        await session.execute(
            select(
                Organization.default_locale,
                Organization.locales,
                Organization.name,
                Organization.help_center,
            ).where(Organization.id == org.id)
        )
    ).one()
    hc = _help_center(row.help_center, row.name, org.slug)
    return _public(row.default_locale, row.locales, hc)


def _canonical_list(tags: list[str]) -> list[str]:
    if not tags:
        raise ValidationFailed(
            "At least one locale is required.", details=field_error("locales", "must not be empty")
        )
    out: list[str] = []
    for tag in tags:
        canonical = canonical_tag(tag)
        if canonical is None:
            raise ValidationFailed(
                f"{tag!r} is not a BCP 47 tag known to CLDR.",
                details=field_error("locales", f"unknown tag {tag!r}"),
            )
        if canonical in out:
            raise ValidationFailed(
                f"{canonical} is listed twice.",
                details=field_error("locales", f"duplicate tag {canonical}"),
            )
        out.append(canonical)
    return out


def _canonical_default(tag: str) -> str:
    canonical = canonical_tag(tag)
    if canonical is None:
        raise ValidationFailed(
            f"{tag!r} is not a BCP 47 tag known to CLDR.",
            details=field_error("defaultLocale", f"unknown tag {tag!r}"),
        )
    return canonical


async def _in_use(session: AsyncSession, tags: list[str]) -> list[str]:
    """Which of ``tags`` still have translations of live questions or categories (those of
    deleted ones go with them and cannot be reached to be deleted)."""
    questions = (
        select(QuestionTranslation.locale)
        .join(Question, Question.id == QuestionTranslation.question_id)
        .where(Question.deleted_at.is_(None), QuestionTranslation.locale.in_(tags))
    )
    categories = (
        select(CategoryTranslation.locale)
        .join(Category, Category.id == CategoryTranslation.category_id)
        .where(Category.deleted_at.is_(None), CategoryTranslation.locale.in_(tags))
    )
    found = set((await session.execute(union(questions, categories))).scalars())
    return [t for t in tags if t in found]


async def update_settings(
    session: AsyncSession, org: Principal, changes: dict[str, Any]
) -> dict[str, Any]:
    """PATCH: ``changes`` maps the client's field names (``defaultLocale``, ``locales``) to
    the values sent."""
    for field in ("defaultLocale", "locales", help_center.FIELD):
        if field in changes and changes[field] is None:
            raise ValidationFailed(details=field_error(field, "must not be null"))
    new_locales = _canonical_list(changes["locales"]) if "locales" in changes else None
    new_default = (
        _canonical_default(changes["defaultLocale"]) if "defaultLocale" in changes else None
    )
    row = (
        await session.execute(
            select(
                Organization.plan,
                Organization.default_locale,
                Organization.locales,
                Organization.name,
                Organization.help_center,
            )
            .where(Organization.id == org.id)
            .with_for_update(key_share=True)  # FOR NO KEY UPDATE (see the module's doc)
        )
    ).one()
    new_hc = (
        help_center.merged(row.help_center, changes[help_center.FIELD])
        if help_center.FIELD in changes
        else None
    )
    if new_hc is not None:
        # Stored in full: the pages read the record the directory caches (no org name there).
        new_hc = help_center.stored_form(new_hc, row.name)
    locales = new_locales if new_locales is not None else list(row.locales)
    default = new_default if new_default is not None else row.default_locale
    if default not in locales:
        field = "defaultLocale" if new_default is not None else "locales"
        raise ValidationFailed(
            f"The default locale {default} must be one of the locales.",
            details=field_error(field, f"{default} is not in locales"),
        )
    cap = cap_of(Plan(row.plan), "locales")
    # Over the cap (after a downgrade) an org may still remove or reorder, never add.
    if cap is not None and len(locales) > cap and not set(locales) <= set(row.locales):
        raise PlanLimitReached(
            f"The {row.plan} plan allows {cap} locales; upgrade to enable more.",
            details=field_error("locales", f"at most {cap} locales"),
        )
    removed = [t for t in row.locales if t not in locales]
    in_use = await _in_use(session, removed) if removed else []
    if in_use:
        raise LocaleInUse(
            f"{', '.join(in_use)} still {'has' if len(in_use) == 1 else 'have'} translations.",
            details=[{"field": "locales", "issue": f"{t} has translations"} for t in in_use],
        )
    stored_hc = new_hc if new_hc is not None else row.help_center
    before_hc = _help_center(row.help_center, row.name, org.slug)
    before = _public(row.default_locale, row.locales, before_hc)
    after = _public(default, locales, _help_center(stored_hc, row.name, org.slug))
    if after == before and stored_hc == row.help_center:
        return after
    await session.execute(
        update(Organization)
        .where(Organization.id == org.id)
        .values(
            default_locale=default, locales=locales, help_center=stored_hc, updated_at=func.now()
        )
    )
    # Changed fields only, as in the category audit.
    changed_before = {k: v for k, v in before.items() if after[k] != v}
    changed_after = {k: v for k, v in after.items() if before[k] != v}
    await record_audit(
        session,
        resource_type="organization",
        resource_id=org.id,
        action=AUDIT_ACTION,
        actor=org.actor,
        before=changed_before,
        after=changed_after,
    )
    if changed_after:  # not a rewrite of the stored help center that clients cannot see
        await audit_settings(session, org.id, org.actor, changed_before, changed_after)
    await notify_tenancy_changed(session, org.id)
    # Reads negotiate their language among the enabled locales, and help center pages show
    # its title and colour: cached bodies must go.
    note_write(session.info, None)
    return after


async def ensure_locale_enabled(session: AsyncSession, org: Principal, locale: str) -> None:
    """For writers of translations: ``locale`` is enabled in the org row (not only in the
    cached context), and stays so until this transaction ends (``FOR NO KEY UPDATE``, as
    the PATCH takes: a PATCH removing it waits, then sees the translation). Read once per
    locale and transaction (the lock lasts until it ends), so an import of many translations
    reads the row once."""
    if not once_per_transaction(session, f"locale-enabled:{org.id}:{locale}"):
        return
    locales = (
        await session.execute(
            select(Organization.locales)
            .where(Organization.id == org.id)
            .with_for_update(key_share=True)
        )
    ).scalar_one()
    if locale not in locales:
        raise ValidationFailed(
            f"The locale {locale} is not enabled for this organization (see /settings).",
            details=field_error("locale", "not enabled"),
        )
