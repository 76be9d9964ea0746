"""Fresh, isolated stores on the session's embedded servers for tests that run the chart."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
import redis


def with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


async def _admin(url: str, statement: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@pytest.fixture
def fresh_database() -> Iterator[str]:
    """An empty database on the embedded PostgreSQL: the migration hook starts from nothing."""
    admin_url = os.environ["DATABASE_URL"]
    database = f"faq_chart_{secrets.token_hex(4)}"
    asyncio.run(_admin(admin_url, f'CREATE DATABASE "{database}"'))
    try:
        yield with_database(admin_url, database)
    finally:
        asyncio.run(_admin(admin_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))


@pytest.fixture
def spare_redis() -> Iterator[str]:
    """A Redis database number the rest of the suite does not use."""
    url = with_database(os.environ["REDIS_URL"], "7")
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        client.close()
