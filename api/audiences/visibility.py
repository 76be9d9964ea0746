"""The one rule of who may read what (issue 39), written once for every surface.

A reader's audiences ``R`` (``reader_audiences``): ``None`` for a principal that sees
everything (a secret key, a member, the service), else the slugs its verified reader token
grants (``()`` for an anonymous reader or a publishable key without a reader).

- A **category** is visible when every non-empty ``audiences`` list on it and on each of its
  ancestors intersects ``R``: each list is an element of its derived ``audience_path``
  (``refresh_audience_paths``).
- A **question** is visible when its own ``audiences`` is empty or intersects ``R``, and its
  category is visible.

The rule comes as SQL text (``question_rule_sql``, ``category_rule_sql``) for the hand-written
SQL of the hot reads, ``/answers`` and the vocabulary, and as SQLAlchemy expressions
(``question_visible``, ``category_visible``) for the rest: the same text inside. Audience slugs
are written into the text as literals only after ``^[a-z0-9]+(?:-[a-z0-9]+)*$`` is checked
again here (they come from verified tokens, whose claims were checked the same way).
"""

from __future__ import annotations

import re

from sqlalchemy import ColumnElement, text, true
from sqlalchemy.ext.asyncio import AsyncSession

from tenancy.principal import Principal

Audiences = tuple[str, ...] | None
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_ALIAS = re.compile(r"^[a-z_][a-z0-9_]*$")


def reader_audiences(principal: Principal) -> Audiences:
    """``None`` (sees everything) unless the principal is a publishable key or a visitor; then
    the audiences of its reader, if any."""
    if not principal.public:
        return None
    return principal.reader.audiences if principal.reader is not None else ()


def _slugs(audiences: tuple[str, ...]) -> str:
    """``audiences`` as a ``text[]`` literal (each slug checked: no quote can get in)."""
    for slug in audiences:
        if not _SLUG.fullmatch(slug) or len(slug) > 100:
            raise ValueError(f"not an audience slug: {slug!r}")
    inner = ",".join(f"'{slug}'" for slug in sorted(set(audiences)))
    return f"ARRAY[{inner}]::text[]" if inner else "'{}'::text[]"


def _alias(name: str) -> str:
    if not _ALIAS.fullmatch(name):
        raise ValueError(f"not an alias: {name!r}")
    return name


def category_rule_sql(audiences: Audiences, c: str = "categories") -> str | None:
    """The rule for the category row ``c`` (a table name or alias), or None: no rule."""
    if audiences is None:
        return None
    c = _alias(c)
    if not audiences:
        return f"({c}.audience_path = '[]'::jsonb)"
    return (
        f"(NOT EXISTS (SELECT 1 FROM jsonb_array_elements({c}.audience_path) AS vis_level"
        f" WHERE NOT jsonb_exists_any(vis_level.value, {_slugs(audiences)})))"
    )


def question_rule_sql(audiences: Audiences, q: str = "questions") -> str | None:
    """The rule for the question row ``q`` (a table name or alias), or None: no rule."""
    if audiences is None:
        return None
    q = _alias(q)
    own = f"cardinality({q}.audiences) = 0"
    if audiences:
        own = f"({own} OR {q}.audiences::text[] && {_slugs(audiences)})"
    hidden = category_rule_sql(audiences, "vis_category")
    return (
        f"({own} AND NOT EXISTS (SELECT 1 FROM categories AS vis_category"
        f" WHERE vis_category.id = {q}.category_id AND NOT {hidden}))"
    )


def question_visible(audiences: Audiences, q: str = "questions") -> ColumnElement[bool]:
    rule = question_rule_sql(audiences, q)
    return true() if rule is None else text(rule)  # type: ignore[return-value]


def category_visible(audiences: Audiences, c: str = "categories") -> ColumnElement[bool]:
    rule = category_rule_sql(audiences, c)
    return true() if rule is None else text(rule)  # type: ignore[return-value]


# Each category's path: its ancestors' and its own non-empty ``audiences``, root first. Deleted
# categories are walked too (a question may still point at one until it is purged).
_REFRESH_PATHS = text(
    """
    WITH RECURSIVE tree(id, path) AS (
        SELECT id, CASE WHEN cardinality(audiences) = 0 THEN '[]'::jsonb
                        ELSE jsonb_build_array(to_jsonb(audiences)) END
        FROM categories WHERE parent_id IS NULL
      UNION ALL
        SELECT c.id, CASE WHEN cardinality(c.audiences) = 0 THEN t.path
                          ELSE t.path || jsonb_build_array(to_jsonb(c.audiences)) END
        FROM categories c JOIN tree t ON c.parent_id = t.id
    )
    UPDATE categories SET audience_path = tree.path
    FROM tree
    WHERE categories.id = tree.id AND categories.audience_path IS DISTINCT FROM tree.path
    """
)


async def refresh_audience_paths(session: AsyncSession) -> None:
    """Recompute every category's ``audience_path`` of the bound org (one statement), after a
    write that changed a category's ``audiences`` or its place in the tree."""
    await session.execute(_REFRESH_PATHS)
