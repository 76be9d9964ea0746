"""Readers' searches as the analytics collector writes them, for the gaps tests (issue 38)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from ulid import ULID

from tenancy.db import tenant_session
from tenancy.transactions import commit
from tests.fixtures.orgs import OrgClient

# (seconds after the start, visitor, query, results, opened question id or None)
Search = tuple[float, str, str, int, str | None]


async def add_reader_searches(
    engine: AsyncEngine, org: OrgClient, start: datetime, *rows: Search, locale: str = "en"
) -> None:
    async with tenant_session(engine, org.info.schema_name) as session:
        for offset, visitor, query, results, opened in rows:
            await session.execute(
                text(
                    "INSERT INTO search_events (id, at, source, locale, query, results, visitor,"
                    " clicked_question_id) VALUES (:id, :at, 'help_center', :locale, :query,"
                    " :results, :visitor, :opened)"
                ),
                {
                    "id": f"se_{ULID()}",
                    "at": start + timedelta(seconds=offset),
                    "locale": locale,
                    "query": query,
                    "results": results,
                    "visitor": visitor.ljust(32, "0"),
                    "opened": opened,
                },
            )
        await commit(session)


def an_hour_ago() -> datetime:
    return datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)


def readers_searches(license_id: str) -> list[Search]:
    """Content gaps (gift cards; sso), a reformulation seen twice ("swap seats" -> "transfer
    license", opening ``license_id``), one seen once, one too slow, and one the support
    lexicon already joins ("money back" -> "refund")."""
    return [
        (0, "a1", "gift card", 0, None),
        (5, "a2", "gift cards", 0, None),
        (9, "a3", "buy a gift card", 0, None),
        (10, "a4", "sso", 0, None),
        (11, "a5", "sso", 0, None),
        (20, "r1", "swap seats", 0, None),
        (80, "r1", "transfer license", 1, license_id),
        (30, "r2", "swap seats", 2, None),
        (90, "r2", "transfer license", 1, license_id),
        (40, "r3", "move seat", 0, None),
        (100, "r3", "transfer license", 1, license_id),
        (50, "r4", "hand over seats", 2, None),
        (50 + 3600, "r4", "transfer license", 1, license_id),
        (60, "r5", "money back", 1, None),
        (70, "r5", "refund", 1, license_id),
        (61, "r6", "money back", 1, None),
        (71, "r6", "refund", 1, license_id),
    ]
