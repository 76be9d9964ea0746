"""Engines, declarative bases and the one place that binds SQL to an org's schema.

Tenant tables are declared in the placeholder schema ``tenant``. No schema of that name ever
exists, and the role's ``search_path`` is the empty schema ``unbound``, so SQL that runs
without an org bound fails instead of reaching another org's data.

Binding (``tenant_session``, ``bind_org``): tenant tables render *without* a schema (the
placeholder is translated to a marker that is stripped just before the SQL is sent), and each
transaction starts with ``set_config('search_path', '"t_..."', true)``, i.e. ``SET LOCAL``: it
ends with the transaction, so no pooled connection ever keeps an org's search_path. The SQL
text is then the same for every org, so asyncpg's per-connection prepared statements (keyed on
the text) are shared by all orgs. With the schema in the text (``schema_translate_map`` to
the real schema), each org needs its own prepared statements: at 1,000 orgs nearly every
query was prepared again and throughput fell to 0.65 of 10 orgs (``docs/performance.md``).

Round trips (issue 14): a read of a request that has not written runs through ``read_rows``
on a pool of its own in autocommit whose connections keep the last org's search_path: one
round trip when the connection holds that org's path already, two else.
"""

from __future__ import annotations

import re
from typing import Any, cast

import orjson
from sqlalchemy import Connection, Executable, MetaData, Result, event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.orm import DeclarativeBase, ORMExecuteState, Session, SessionTransaction
from sqlalchemy.util import await_only, greenlet_spawn

from tenancy.generations import CHANGE, INSERT, WROTE_KEY, bump, note_write, statement_kind
from tenancy.loop_resources import peek, per_loop
from tenancy.settings import Settings, get_settings

TENANT_SCHEMA_PLACEHOLDER = "tenant"
SHARED_SCHEMA = "shared"
# The role's search_path points here: an empty schema nobody may create objects in.
UNBOUND_SCHEMA = "unbound"
SCHEMA_NAME_RE = re.compile(r"^t_[0-9a-z]{26}$")
# Tenant tables render as ``__tenant__.name``; the marker is stripped right before the SQL is
# sent (``_strip_schema_marker``). Where the strip is missing, the schema does not exist.
SCHEMA_FREE_MARKER = "__tenant__"
_MARKER_DOT = SCHEMA_FREE_MARKER + "."
SCHEMA_FREE: dict[str | None, str | None] = {TENANT_SCHEMA_PLACEHOLDER: SCHEMA_FREE_MARKER}
_SET_SEARCH_PATH = text("SELECT set_config('search_path', :path, true)")
# An org transaction's first statement: its search_path and its statement_timeout, both
# LOCAL, in one round trip. The timeout is the engine's (``make_engine``).
_BIND_TRANSACTION = text(
    "SELECT set_config('search_path', :path, true), set_config('statement_timeout', :ms, true)"
)
_SEARCH_PATH_KEY = "tenant_search_path"
# Engine execution option: statement_timeout (ms, 0: none) of its org transactions.
STATEMENT_TIMEOUT_OPTION = "faq_statement_timeout_ms"

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


def make_engine(
    settings: Settings, *, pool_size: int | None = None, statement_timeout_ms: int | None = None
) -> AsyncEngine:
    """Create an engine. Call it inside the process (and event loop) that will use it.

    ``statement_timeout_ms``: the statement_timeout of its org transactions (``tenant_session``;
    0: none); the request timeout unless told (the worker passes the job timeout). It is SET
    LOCAL per transaction, so ``bind_org`` (provisioning) and migrations are never cut short."""
    if statement_timeout_ms is None:
        statement_timeout_ms = settings.faq_request_statement_timeout_ms
    engine = create_async_engine(
        asyncpg_url(settings.require_database_url()),
        pool_size=pool_size or settings.faq_db_pool_size,
        max_overflow=settings.faq_db_max_overflow,
        pool_recycle=settings.faq_db_pool_recycle_seconds,
        # No ping per checkout (a round trip per request): a connection lost to a restart
        # fails its request with a clean 503 and invalidates the whole pool at once.
        pool_pre_ping=False,
        hide_parameters=True,  # exception messages (and so logs) never carry bound values
        json_serializer=_json_dumps,
        json_deserializer=orjson.loads,
        connect_args={"server_settings": SERVER_SETTINGS},
        execution_options={STATEMENT_TIMEOUT_OPTION: statement_timeout_ms},
    )
    _install_schema_free_sql(engine)
    # The vector codec first: declaring a codec clears the derived (array) types declared before.
    event.listen(engine.sync_engine, "connect", _register_vector_codec)
    event.listen(engine.sync_engine, "connect", _register_array_codecs)
    return engine


# Sent in the start-up packet of every connection (no round trip). On a Citus coordinator,
# ``citus.override_table_visibility = off`` drops the shard-hiding filter Citus adds to every
# catalog scan (issue 18: 52 s for one catalog query at ~150 orgs); on plain PostgreSQL it is
# a placeholder setting and changes nothing.
SERVER_SETTINGS = {"search_path": UNBOUND_SCHEMA, "citus.override_table_visibility": "off"}

# Built-in array types, by the OIDs PostgreSQL fixes for them: asyncpg ships no codec for any
# array and introspects each one on a connection's first use (a catalog query per type per
# connection). Declared from these rows instead, with the element types' own codecs.
_BUILTIN_ARRAYS = (
    (1000, "bool", 16),
    (1001, "bytea", 17),
    (1005, "int2", 21),
    (1007, "int4", 23),
    (1016, "int8", 20),
    (1021, "float4", 700),
    (1022, "float8", 701),
    (1231, "numeric", 1700),
    (1014, "bpchar", 1042),
    (1015, "varchar", 1043),
    (1003, "name", 19),
    (1115, "timestamp", 1114),
    (1185, "timestamptz", 1184),
    (1182, "date", 1082),
    (1187, "interval", 1186),
    (2951, "uuid", 2950),
    (199, "json", 114),
    (3807, "jsonb", 3802),
)


def _register_array_codecs(dbapi_conn: Any, _record: Any) -> None:
    """A new connection: the array codecs asyncpg would otherwise introspect (``_BUILTIN_ARRAYS``),
    declared without a query. Uses asyncpg's codec registry (what its introspection feeds)."""
    registry = dbapi_conn.driver_connection._protocol.get_settings()
    registry.register_data_types(
        [
            {
                "oid": oid,
                "ns": "pg_catalog",
                "name": f"_{element}",
                "kind": b"b",
                "basetype": None,
                "elemtype": element_oid,
                "elemtype_name": element,
                "elemdelim": b",",
                "range_subtype": None,
                "attrtypoids": None,
                "attrnames": None,
            }
            for oid, element, element_oid in _BUILTIN_ARRAYS
        ]
    )


# pgvector's type (issue 28) has no fixed OID: it is looked up once per database per process
# (``to_regtype``, not asyncpg's type introspection; again at each new connection while the
# extension is not there yet) and declared as text, both ways.
_VECTOR_OIDS: dict[tuple[str, str], int] = {}
_VECTOR_OID_SQL = "SELECT to_regtype('public.vector')::oid"


def _register_vector_codec(dbapi_conn: Any, _record: Any) -> None:
    driver = dbapi_conn.driver_connection
    params = driver._params
    key = (str(driver._addr), str(params.database))
    oid = _VECTOR_OIDS.get(key)
    if oid is None:
        oid = await_only(driver.fetchval(_VECTOR_OID_SQL))
        if oid is not None:
            _VECTOR_OIDS[key] = oid
    if oid is not None:
        driver._protocol.get_settings().add_python_codec(
            oid, "vector", "public", [], "scalar", str, str, "text"
        )


def checked_schema_name(schema: str) -> str:
    """Schema names come from internal ids only; refuse anything else outright."""
    if not SCHEMA_NAME_RE.fullmatch(schema):
        raise ValueError(f"not a tenant schema name: {schema!r}")
    return schema


def _strip_schema_marker(
    _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool
) -> tuple[str, Any]:
    if _MARKER_DOT in statement:
        statement = statement.replace(_MARKER_DOT, "")
    return statement, parameters


def _install_schema_free_sql(engine: AsyncEngine) -> None:
    sync_engine = engine.sync_engine
    if not event.contains(sync_engine, "before_cursor_execute", _strip_schema_marker):
        event.listen(sync_engine, "before_cursor_execute", _strip_schema_marker, retval=True)


_schema_free_engines: dict[int, tuple[AsyncEngine, AsyncEngine]] = {}


def _schema_free(engine: AsyncEngine) -> AsyncEngine:
    """The engine view whose tenant tables render without a schema (one per engine)."""
    hit = _schema_free_engines.get(id(engine))
    if hit is not None and hit[0] is engine:
        return hit[1]
    _install_schema_free_sql(engine)
    view = engine.execution_options(schema_translate_map=SCHEMA_FREE)
    _schema_free_engines[id(engine)] = (engine, view)
    return view


def search_path_of(schema: str) -> str:
    return f'"{checked_schema_name(schema)}"'


class TenantSyncSession(Session):
    """Sessions of one org: every transaction they begin starts with SET LOCAL search_path
    and statement_timeout (a cancelled statement is a 503 in the API, ``api/app.py``)."""


@event.listens_for(TenantSyncSession, "after_begin")
def _bind_transaction(
    session: Session, _transaction: SessionTransaction, connection: Connection
) -> None:
    timeout_ms = int(connection.get_execution_options().get(STATEMENT_TIMEOUT_OPTION, 0))
    path = session.info[_SEARCH_PATH_KEY]
    # BEGIN (the driver's) and this binding are two round trips. Sending them as one string
    # (a hand-made transaction object in SQLAlchemy's asyncpg adapter) saved one, but left
    # connections in a state asyncpg refused during a PostgreSQL restart (a 500 instead of a
    # 503): kept out, see docs/performance.md.
    connection.execute(_BIND_TRANSACTION, {"path": path, "ms": str(timeout_ms)})


@event.listens_for(TenantSyncSession, "do_orm_execute")
def _note_statement(state: ORMExecuteState) -> None:
    if not state.is_select:
        statement = state.statement
        note_write(state.session.info, getattr(statement, "table", None), statement_kind(statement))


@event.listens_for(TenantSyncSession, "after_flush")
def _note_flush(session: Session, _context: Any) -> None:
    for obj in session.new:
        note_write(session.info, getattr(obj, "__table__", None), INSERT)
    for obj in (*session.dirty, *session.deleted):
        note_write(session.info, getattr(obj, "__table__", None), CHANGE)


@event.listens_for(TenantSyncSession, "after_commit")
def _bump_generation(session: Session) -> None:
    """A committed write to versioned tables: the org's cached reads of the generations it
    changed (``tenancy.generations``) are stale everywhere."""
    kinds = session.info.pop(WROTE_KEY, ())
    if kinds:
        await_only(bump(session.info[_SEARCH_PATH_KEY].strip('"'), kinds))


@event.listens_for(TenantSyncSession, "after_soft_rollback")
def _forget_writes(session: Session, _previous: Any) -> None:
    session.info.pop(WROTE_KEY, None)


def tenant_session(engine: AsyncEngine, schema: str) -> AsyncSession:
    """A session that sees one org's schema (and the shared schema) and nothing else."""
    return AsyncSession(
        bind=_schema_free(engine),
        sync_session_class=TenantSyncSession,
        info={_SEARCH_PATH_KEY: search_path_of(schema)},
        expire_on_commit=False,
    )


def sibling_session(session: AsyncSession) -> AsyncSession:
    """A new session of the org and engine of ``session`` (work that outlives a request, such
    as a cache's background refresh, opens its own)."""
    return AsyncSession(
        bind=session.bind,
        sync_session_class=TenantSyncSession,
        info={_SEARCH_PATH_KEY: session.info[_SEARCH_PATH_KEY]},
        expire_on_commit=False,
    )


def org_path(session: AsyncSession) -> str:
    """The search path ``session`` binds (its org's schema, quoted): a per-org cache key."""
    return str(session.info[_SEARCH_PATH_KEY])


async def bind_org(conn: AsyncConnection, schema: str) -> AsyncConnection:
    """Bind an open transaction of ``conn`` to ``schema`` (until it ends); returns the view of
    ``conn`` to run tenant statements on."""
    if not conn.in_transaction():
        raise RuntimeError("bind_org needs an open transaction (SET LOCAL ends with it)")
    _install_schema_free_sql(conn.engine)
    await conn.execute(_SET_SEARCH_PATH, {"path": search_path_of(schema)})
    return await conn.execution_options(schema_translate_map=SCHEMA_FREE)


def shared_session(engine: AsyncEngine) -> AsyncSession:
    """A session with no org bound: tenant tables are unreachable from it."""
    return AsyncSession(bind=engine, expire_on_commit=False)


# ---- reads in one round trip (issue 14) ------------------------------------------------------

# The read pool's binding: session-level (its connections run in autocommit, no transaction).
_SET_READ_PATH = text("SELECT set_config('search_path', :path, false)")
# ConnectionPoolEntry.info of a read connection: (its driver connection, the path it holds).
_READ_PATH_KEY = "tenant_read_search_path"
ReadSettings = tuple[tuple[str, str], ...]  # (name, value) pairs of a read's configuration


async def _dispose(engine: AsyncEngine) -> None:
    await engine.dispose()


# The per-loop resource name of each engine view's read pool (computed once per view).
_read_engine_names: dict[int, tuple[AsyncEngine, str]] = {}


def _read_engine(view: AsyncEngine) -> AsyncEngine:
    """The pool of ``read_rows`` for ``view``'s database (one per loop): AUTOCOMMIT (a read is
    one statement, no BEGIN/COMMIT), the engine's statement_timeout in the start-up packet, and
    connections that keep the search_path of the last org they read for. Nothing else uses
    this pool, and ``read_rows`` binds its org before each read unless the connection holds
    that org's path already: no statement on it runs with another org's path."""
    known = _read_engine_names.get(id(view))
    if known is not None and known[0] is view:
        engine = peek(known[1])
        if engine is not None:
            return cast(AsyncEngine, engine)
    timeout_ms = int(view.get_execution_options().get(STATEMENT_TIMEOUT_OPTION, 0))
    url = view.url

    def make() -> AsyncEngine:
        settings = get_settings()
        engine = create_async_engine(
            url,
            isolation_level="AUTOCOMMIT",
            # A read holds its connection for one statement: no overflow (the connection
            # budget of docs/operations.md counts FAQ_DB_POOL_SIZE more per API process).
            pool_size=settings.faq_db_pool_size,
            max_overflow=0,
            pool_recycle=settings.faq_db_pool_recycle_seconds,
            pool_pre_ping=False,
            # The connection used last goes out first: a run of one org's reads finds it bound
            # to that org already (first in, first out handed each read the connection idle
            # longest, bound to whichever org it served last: one more round trip).
            pool_use_lifo=True,
            # Autocommit: no transaction to end on return (``read_records`` returns its
            # connections outside SQLAlchemy's greenlet).
            pool_reset_on_return=None,
            hide_parameters=True,
            json_serializer=_json_dumps,
            json_deserializer=orjson.loads,
            connect_args={
                "server_settings": {**SERVER_SETTINGS, "statement_timeout": str(timeout_ms)}
            },
            execution_options={"schema_translate_map": SCHEMA_FREE},
        )
        _install_schema_free_sql(engine)
        event.listen(engine.sync_engine, "connect", _register_vector_codec)
        event.listen(engine.sync_engine, "connect", _register_array_codecs)
        return engine

    name = f"tenant_reads:{url.render_as_string(hide_password=True)}:{timeout_ms}"
    _read_engine_names[id(view)] = (view, name)
    return per_loop(name, make, _dispose)


async def _bind_read_connection(conn: AsyncConnection, path: str) -> None:
    """Set the read connection's search_path to ``path`` unless it holds it already (the
    record names the driver connection too: a reconnected entry is bound again)."""
    driver = (await conn.get_raw_connection()).driver_connection
    held = conn.info.get(_READ_PATH_KEY)
    if held is not None and held[0] is driver and held[1] == path:
        return
    conn.info.pop(_READ_PATH_KEY, None)
    await conn.execute(_SET_READ_PATH, {"path": path})
    conn.info[_READ_PATH_KEY] = (driver, path)


def _read_pool_of(session: AsyncSession) -> tuple[AsyncEngine, str]:
    """The read pool of a ``tenant_session`` and the search_path of its org."""
    bind = session.bind
    if not isinstance(bind, AsyncEngine):
        raise RuntimeError("reads on the read pool need a session of tenant_session")
    path: str = session.info[_SEARCH_PATH_KEY]
    return _read_engine(bind), path


async def read_rows(
    session: AsyncSession, statement: Executable, parameters: dict[str, Any] | None = None
) -> Result[Any]:
    """Run a read (Core: rows, no ORM objects) for the org of ``session`` (``tenant_session``).

    A session with no transaction open (a read-only request so far): on a connection of the
    read pool (``_read_engine``), one round trip when that connection holds the org's
    search_path already, else two (the binding, then the read); READ COMMITTED gives each
    statement its own snapshot either way. In a transaction: on its connection, so the read
    sees the transaction's own writes."""
    if session.in_transaction():
        conn = await session.connection()
        return await conn.execute(statement, parameters)
    engine, path = _read_pool_of(session)
    try:
        async with engine.connect() as conn:
            await _bind_read_connection(conn, path)
            return await conn.execute(statement, parameters)
    except DBAPIError as error:
        if not error.connection_invalidated:
            raise
    # The connection was lost (a PostgreSQL restart: the pool is invalidated at once). A read
    # changes nothing, so it is tried once more on a new connection.
    async with engine.connect() as conn:
        await _bind_read_connection(conn, path)
        return await conn.execute(statement, parameters)


async def read_records(
    session: AsyncSession, sql: str, *args: Any, settings: ReadSettings = ()
) -> list[Any]:
    """``read_rows`` for SQL written as PostgreSQL takes it (tenant tables unqualified,
    parameters ``$1``, ``$2``...): asyncpg's records, without SQLAlchemy's statement and result
    layers (issue 14: the hot reads build their JSON in SQL). The same binding as
    ``read_rows``: in a transaction on its connection, else on the read pool, bound to the
    session's org before the read unless the connection holds its path already; a read whose
    connection was lost is sent once more on a new one (the read pool is disposed first:
    what SQLAlchemy does when it sees a connection lost, every pooled one is suspect).
    ``settings``: configuration the read needs (``(name, value)`` pairs, such as pgvector's
    ``hnsw.ef_search``): local to the transaction in one, else kept by the pooled connection
    (set once per connection: a read pool's setting must suit every read it serves)."""
    if session.in_transaction():
        conn = await session.connection()
        own: Any = (await conn.get_raw_connection()).driver_connection
        for name, value in settings:
            await own.fetchval(_SET_SQL, name, value, True)
        return cast(list[Any], await own.fetch(sql, *args))
    engine, path = _read_pool_of(session)
    try:
        return await _fetch_on_read_pool(engine, path, sql, args, settings)
    except _LostConnection:
        # Every pooled connection is suspect now (what SQLAlchemy does when it sees one lost).
        await engine.dispose()
    return await _fetch_on_read_pool(engine, path, sql, args, settings)


class _LostConnection(Exception):
    """The read's pooled connection was closed under it (``read_records`` tries once more)."""


_SET_READ_PATH_SQL = "SELECT set_config('search_path', $1, false)"
_SET_SQL = "SELECT set_config($1, $2, $3)"
_READ_SETTINGS_KEY = "faq_read_settings"  # (driver, settings) a pooled connection holds


async def _fetch_on_read_pool(
    engine: AsyncEngine, path: str, sql: str, args: tuple[Any, ...], settings: ReadSettings
) -> list[Any]:
    """One read on a pooled connection of the read pool, through the pool's raw checkout (no
    SQLAlchemy ``Connection`` around it: the read pool resets nothing on return, its
    connections are in autocommit), bound to ``path`` unless it holds it already."""
    fairy = await engine.raw_connection()
    driver: Any = fairy.driver_connection
    try:
        held = fairy.info.get(_READ_PATH_KEY)
        if held is None or held[0] is not driver or held[1] != path:
            fairy.info.pop(_READ_PATH_KEY, None)
            await driver.fetchval(_SET_READ_PATH_SQL, path)
            fairy.info[_READ_PATH_KEY] = (driver, path)
        if settings and fairy.info.get(_READ_SETTINGS_KEY) != (driver, settings):
            for name, value in settings:
                await driver.fetchval(_SET_SQL, name, value, False)
            fairy.info[_READ_SETTINGS_KEY] = (driver, settings)
        return cast(list[Any], await driver.fetch(sql, *args))
    except Exception as error:
        if not driver.is_closed():
            raise
        await greenlet_spawn(fairy.invalidate)
        raise _LostConnection() from error
    finally:
        if fairy.is_valid:
            fairy.close()
