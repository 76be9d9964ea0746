"""The source's creation and update times of what an import writes (issue 41: kept as
``createdAt``/``updatedAt``): each create or update writes the import's time, then the batch
sets the source's, one ``UPDATE`` per table (``SourceTimes.flush``), in the batch's transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, bindparam, func, update
from sqlalchemy.ext.asyncio import AsyncSession

from api.categories.models import Category
from api.questions.models import Question
from api.translations.models import CategoryTranslation, QuestionTranslation

Times = tuple[datetime | None, datetime | None]  # (created, updated); None: the row's own


def _source_times(item: Any, current: Any) -> Times | None:
    """The (created, updated) times the source gives ``item``, or None when it gives none or
    they are those of ``current`` (the row as it is, if any)."""
    if item.created_at is None and item.updated_at is None:
        return None
    if current is not None and (
        item.created_at in (None, current.created_at)
        and item.updated_at in (None, current.updated_at)
    ):
        return None
    return item.created_at, item.updated_at


class SourceTimes:
    """A batch's source times to keep: of questions and categories by ``(kind, id)``, of
    their translations by ``(kind, resource id, locale)``."""

    def __init__(self) -> None:
        self.resources: dict[tuple[str, str], Times] = {}
        self.translations: dict[tuple[str, str, str], Times] = {}

    def keep(self, kind: str, id_: str, item: Any, current: Any = None) -> None:
        """The source's times for the resource ``id_``; an existing resource only when they
        differ from its own."""
        if (times := _source_times(item, current)) is not None:
            self.resources[(kind, id_)] = times

    def keep_translation(self, kind: str, id_: str, locale: str, item: Any, before: Any) -> None:
        """``keep`` of a translation (``before``: its row before this write, if any and
        unchanged by it)."""
        if (times := _source_times(item, before)) is not None:
            self.translations[(kind, id_, locale)] = times

    def clear(self) -> None:
        self.resources, self.translations = {}, {}

    async def flush(self, session: AsyncSession) -> None:
        """One UPDATE per table of the resources whose source said when they were made and
        changed (their create or update wrote the time of the import)."""
        resources, translations = self.resources, self.translations
        self.clear()
        for kind, table in (("question", Question.__table__), ("category", Category.__table__)):
            rows = [
                {"b_id": i, "b_created": c, "b_updated": u}
                for (k, i), (c, u) in sorted(resources.items())
                if k == kind
            ]
            where = table.c.id == bindparam("b_id")
            await _set_times(session, cast(Table, table), where, rows)
        for kind, table, key in (
            ("question", QuestionTranslation.__table__, "question_id"),
            ("category", CategoryTranslation.__table__, "category_id"),
        ):
            rows = [
                {"b_id": i, "b_locale": loc, "b_created": c, "b_updated": u}
                for (k, i, loc), (c, u) in sorted(translations.items())
                if k == kind
            ]
            where = (table.c[key] == bindparam("b_id")) & (table.c.locale == bindparam("b_locale"))
            await _set_times(session, cast(Table, table), where, rows)


async def _set_times(
    session: AsyncSession, table: Table, where: ColumnElement[bool], rows: list[dict[str, Any]]
) -> None:
    if not rows:
        return
    await session.execute(
        update(table)
        .where(where)
        .values(
            created_at=func.coalesce(bindparam("b_created"), table.c.created_at),
            updated_at=func.coalesce(bindparam("b_updated"), table.c.updated_at),
        ),
        rows,
    )
