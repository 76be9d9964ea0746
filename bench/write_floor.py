"""The floor of a write on the design card's stack (issue 40): a bare Quart app under Hypercorn
(one worker, as ``faq serve``) whose ``POST /floor`` parses the JSON body, writes it in one
SQLAlchemy (async, asyncpg) transaction and returns 201 with the stored row as JSON: no
authentication, validation, rate limit, slug, revision, audit or cap. Two shapes, so the cost
of each statement shows:

- ``POST /floor/1``: ``BEGIN``, one ``INSERT … RETURNING``, ``COMMIT``;
- ``POST /floor/5``: ``BEGIN``, the tenant binding (``set_config``), a ``SELECT`` of the
  category, the ``INSERT``, an outbox ``INSERT``, ``COMMIT``: the statements a create sends
  (``tests/api/questions/test_round_trips.py``), each through the ORM session as the service
  sends them.

``python -m bench.write_floor PORT DSN`` (the tables are made at start-up). ``bench.hot_paths``
measures it beside the bare route and the service's create in the same run: what is left of
the bare route's rate once a write touches PostgreSQL at all, which bounds what the service's
create can reach on this stack and machine.
"""

from __future__ import annotations

import json
import sys
import uuid

from quart import Quart, Response, request
from sqlalchemy import text
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from bench.reference_app import serve_on

TABLES = """
CREATE TABLE IF NOT EXISTS floor_categories (id text PRIMARY KEY);
INSERT INTO floor_categories VALUES ('c') ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS floor_questions (
    id text PRIMARY KEY, category_id text NOT NULL REFERENCES floor_categories (id),
    title text NOT NULL, answer text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS floor_outbox (
    id bigserial PRIMARY KEY, type text NOT NULL, data jsonb NOT NULL);
"""
INSERT = text(
    "INSERT INTO floor_questions (id, category_id, title, answer) "
    "VALUES (:id, :category, :title, :answer) RETURNING id, title, answer, created_at"
)

OUTBOX = text("INSERT INTO floor_outbox (type, data) VALUES ('created', CAST(:data AS jsonb))")


def create_app(dsn: str) -> Quart:
    app = Quart("write-floor")
    engine = create_async_engine(dsn, pool_size=20, max_overflow=0)
    sessions = async_sessionmaker(engine, expire_on_commit=False)

    @app.before_serving
    async def tables() -> None:
        async with engine.begin() as conn:
            for statement in TABLES.split(";"):
                if statement.strip():
                    await conn.execute(text(statement))

    @app.get("/healthz")
    async def healthz() -> Response:
        return Response(b'{"status":"ok"}', content_type="application/json")

    @app.post("/floor/<int:statements>")
    async def write(statements: int) -> Response:
        body = json.loads(await request.get_data())
        row = {"id": uuid.uuid4().hex, "title": body["title"], "answer": body["answer"]}
        async with sessions() as session, session.begin():
            if statements > 1:
                await session.execute(text("SELECT set_config('faq.org', 'floor', true)"))
                category = await session.scalar(
                    text("SELECT id FROM floor_categories WHERE id = 'c' FOR KEY SHARE")
                )
            else:
                category = "c"
            stored = (await session.execute(INSERT, {**row, "category": category})).one()
            data = {**stored._asdict(), "created_at": stored.created_at.isoformat()}
            if statements > 1:
                await session.execute(OUTBOX, {"data": json.dumps(data)})
        return Response(json.dumps({"data": data}), status=201, content_type="application/json")

    return app


def main(argv: list[str]) -> None:
    serve_on(create_app(argv[1]), int(argv[0]))


if __name__ == "__main__":
    main(sys.argv[1:])
