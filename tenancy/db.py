"""Engines, declarative bases and the one function that binds a session to an org's schema.

Tenant tables are declared in the placeholder schema ``tenant``. No schema of that name ever
exists, so SQL that runs without an org bound fails instead of reaching another org's data;
``bind_org`` translates the placeholder to the org's real schema for one session.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from sqlalchemy import MetaData
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.orm import DeclarativeBase

from tenancy.settings import Settings

TENANT_SCHEMA_PLACEHOLDER = "tenant"
SHARED_SCHEMA = "shared"
# The role's search_path points here: an empty schema nobody may create objects in.
UNBOUND_SCHEMA = "unbound"
SCHEMA_NAME_RE = re.compile(r"^t_[0-9a-z]{26}$")

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class SharedBase(DeclarativeBase):
    metadata = MetaData(schema=SHARED_SCHEMA, naming_convention=NAMING_CONVENTION)


class TenantBase(DeclarativeBase):
    metadata = MetaData(schema=TENANT_SCHEMA_PLACEHOLDER, naming_convention=NAMING_CONVENTION)


def asyncpg_url(url: str) -> str:
    """Accept ``postgresql://`` URLs and pick the asyncpg driver ourselves."""
    for prefix in ("postgresql+asyncpg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url[len(prefix) :]
    raise ValueError("DATABASE_URL must be a postgresql:// URL")


def _json_dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def make_engine(settings: Settings, *, pool_size: int | None = None) -> AsyncEngine:
    """Create an engine. Call it inside the process (and event loop) that will use it."""
    return create_async_engine(
        asyncpg_url(settings.require_database_url()),
        pool_size=pool_size or settings.faq_db_pool_size,
        max_overflow=settings.faq_db_max_overflow,
        pool_recycle=settings.faq_db_pool_recycle_seconds,
        pool_pre_ping=True,
        hide_parameters=True,  # exception messages (and so logs) never carry bound values
        json_serializer=_json_dumps,
        json_deserializer=orjson.loads,
        connect_args={"server_settings": {"search_path": UNBOUND_SCHEMA}},
    )


def checked_schema_name(schema: str) -> str:
    """Schema names come from internal ids only; refuse anything else outright."""
    if not SCHEMA_NAME_RE.fullmatch(schema):
        raise ValueError(f"not a tenant schema name: {schema!r}")
    return schema


def translate_map(schema: str) -> dict[str | None, str | None]:
    """The schema_translate_map that points tenant tables at ``schema``."""
    return {TENANT_SCHEMA_PLACEHOLDER: checked_schema_name(schema)}


def bind_org(engine: AsyncEngine, schema: str) -> AsyncEngine:
    """An engine view whose SQL addresses ``schema`` for every tenant table."""
    return engine.execution_options(schema_translate_map=translate_map(schema))


def tenant_session(engine: AsyncEngine, schema: str) -> AsyncSession:
    """A session that sees one org's schema (and the shared schema) and nothing else."""
    return AsyncSession(bind=bind_org(engine, schema), expire_on_commit=False)


def shared_session(engine: AsyncEngine) -> AsyncSession:
    """A session with no org bound: tenant tables are unreachable from it."""
    return AsyncSession(bind=engine, expire_on_commit=False)
