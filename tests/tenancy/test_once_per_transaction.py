"""``once_per_transaction``: work whose effect lasts until the transaction ends (the outbox
mark, the lock on the org's locales) is done once per transaction, and again in the next."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import shared_session
from tenancy.transactions import commit, once_per_transaction


async def test_a_key_is_new_once_per_transaction(engine: AsyncEngine) -> None:
    async with shared_session(engine) as session:
        await session.execute(text("SELECT 1"))
        assert once_per_transaction(session, "mark:a") is True
        assert once_per_transaction(session, "mark:a") is False
        assert once_per_transaction(session, "mark:b") is True
        await commit(session)
        await session.execute(text("SELECT 1"))  # the next transaction
        assert once_per_transaction(session, "mark:a") is True
        await session.rollback()
        await session.execute(text("SELECT 1"))
        assert once_per_transaction(session, "mark:a") is True
