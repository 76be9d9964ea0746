"""The search behind ``search_faq``: ``/answers``'s (``api.answers.service.answers_for``):
its ranking, ``confident`` flag and snippets, published questions only, whatever the key."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from api.answers.service import Answer, answers_for
from api.errors import ServiceError
from tenancy.principal import Principal


class NoWords(Exception):
    """The query holds no word to search for."""


async def search(
    session: AsyncSession,
    *,
    query: str,
    locale: str,
    limit: int,
    category: str | None,
    reader: Principal,
) -> list[Answer]:
    try:
        return await answers_for(
            session, reader, q=query, locale=locale, limit=limit, category=category
        )
    except ServiceError as error:
        if any(d.get("field") == "q" for d in error.details):
            raise NoWords() from None
        raise
