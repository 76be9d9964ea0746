"""What reaches the server: every SQL string an engine sends, through SQLAlchemy (its cursor
hook) or straight through the asyncpg driver (asyncpg's query logger), for the Citus checks."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from tenancy.db import make_engine
from tenancy.settings import get_settings
from tests.fixtures.services import Services


class Capture:
    """Collects the SQL strings sent by one engine's connections."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def attach(self, engine: AsyncEngine) -> None:
        sync_engine = engine.sync_engine

        def on_cursor(_c: Any, _cur: Any, statement: str, _p: Any, _ctx: Any, _m: bool) -> None:
            self.statements.append(statement)

        def on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.driver_connection.add_query_logger(
                lambda record: self.statements.append(record.query)
            )

        event.listen(sync_engine, "before_cursor_execute", on_cursor)
        event.listen(sync_engine, "connect", on_connect)


def statement_count(sql: str) -> int:
    """How many SQL statements ``sql`` holds (quotes, dollar quotes and comments skipped)."""
    count, i, n, pending = 0, 0, len(sql), False
    while i < n:
        ch = sql[i]
        if ch in "'\"":
            end = sql.find(ch, i + 1)
            while end != -1 and end + 1 < n and sql[end + 1] == ch:
                end = sql.find(ch, end + 2)
            i = n if end == -1 else end + 1
            pending = True
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end == -1 else end + 1
        elif (
            ch == "$"
            and (tag_end := sql.find("$", i + 1)) != -1
            and (sql[i + 1 : tag_end].replace("_", "").isalnum() or tag_end == i + 1)
        ):
            tag = sql[i : tag_end + 1]
            end = sql.find(tag, tag_end + 1)
            i = n if end == -1 else end + len(tag)
            pending = True
        elif ch == ";":
            count += pending
            pending = False
            i += 1
        else:
            pending = pending or not ch.isspace()
            i += 1
    return count + pending


@asynccontextmanager
async def fresh_database(services: Services, prefix: str) -> AsyncIterator[AsyncEngine]:
    """A database of its own (no shared schema yet), dropped afterwards."""
    name = f"{prefix}_{int(time.time() * 1000)}"
    admin = make_engine(get_settings(), pool_size=1)
    async with admin.connect() as conn:
        await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(text(f"CREATE DATABASE {name}"))
    settings = get_settings().model_copy(
        update={"database_url": services.postgres.url.rsplit("/", 1)[0] + f"/{name}"}
    )
    engine = make_engine(settings, pool_size=4)
    try:
        yield engine
    finally:
        await engine.dispose()
        async with admin.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))
        await admin.dispose()
