"""The org's published questions as MCP resources: ``faq://{org}/questions/{slug}``, Markdown
(the page's Markdown twin). Listed by id, ``PAGE`` at a time; the cursor is the last id. Only
what the caller may read (issue 39, ``api.audiences.visibility``: a publishable key's reader's
audiences; a secret key's every published question)."""

from __future__ import annotations

import re

import mcp_types as types
from mcp.shared.exceptions import MCPError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from api.audiences.visibility import reader_audiences
from api.errors import QuestionNotFound
from api.helpcenter import content
from api.helpcenter.llms import MARKDOWN, question_markdown
from api.mcp.auth import Caller
from api.mcp.tools import page_url
from api.questions.models import Question
from tenancy.db import tenant_session
from tenancy.ids import looks_like_id

PAGE = 100
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for an unknown resource
URI = re.compile(r"^faq://([a-z0-9-]{1,63})/questions/([a-z0-9-]{1,200})$")
MIME = MARKDOWN.split(";")[0]


def uri_of(org_slug: str, slug: str) -> str:
    return f"faq://{org_slug}/questions/{slug}"


def template(caller: Caller) -> types.ResourceTemplate:
    return types.ResourceTemplate(
        name="question",
        title="FAQ answer",
        uri_template=f"faq://{caller.org.slug}/questions/{{slug}}",
        description="A published FAQ answer as Markdown, by the question's slug.",
        mime_type=MIME,
    )


async def listing(
    engine: AsyncEngine, caller: Caller, cursor: str | None
) -> types.ListResourcesResult:
    if cursor is not None and not looks_like_id(cursor, "q"):
        raise MCPError(types.INVALID_PARAMS, "cursor: not a cursor this server issued.")
    stmt = (
        select(Question.id, Question.slug, Question.title)
        .where(*content.readable(reader_audiences(caller.principal)))
        .order_by(Question.id)
        .limit(PAGE + 1)
    )
    if cursor is not None:
        stmt = stmt.where(Question.id > cursor)
    async with tenant_session(engine, caller.org.schema_name) as session:
        rows = (await session.execute(stmt)).all()
    page = rows[:PAGE]
    return types.ListResourcesResult(
        resources=[
            types.Resource(
                uri=uri_of(caller.org.slug, r.slug), name=r.slug, title=r.title, mime_type=MIME
            )
            for r in page
        ],
        next_cursor=page[-1].id if len(rows) > PAGE else None,
    )


async def read(engine: AsyncEngine, caller: Caller, uri: str) -> types.ReadResourceResult:
    matched = URI.match(uri)
    if matched is None or matched.group(1) != caller.org.slug:
        raise MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
    locale = caller.org.default_locale
    try:
        async with tenant_session(engine, caller.org.schema_name) as session:
            question = await content.published_question(
                session, matched.group(2), locale, reader_audiences(caller.principal)
            )
    except QuestionNotFound:
        raise MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri}) from None
    text = question_markdown(question, page_url(caller, locale, question))
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=MIME, text=text)]
    )
