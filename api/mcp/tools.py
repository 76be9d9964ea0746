"""The MCP tools of an org's FAQ: ``search_faq``, ``get_question``, ``list_categories`` and,
for a secret key with ``write``, ``create_draft``. Each call runs in its own transaction bound
to the caller's org; a problem the caller can fix is a ``ToolProblem`` (an error result that
names it), never a stack trace."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncEngine

from api.audiences.visibility import reader_audiences
from api.categories import queries as categories
from api.categories import visibility
from api.errors import CategoryNotFound, InsufficientScope, QuestionNotFound, ServiceError
from api.helpcenter import content
from api.helpcenter.llms import question_markdown, question_url
from api.http.binding import served_locale
from api.mcp import arguments as args
from api.mcp.auth import Caller
from api.mcp.drafts import create_draft, revise
from api.mcp.searching import NoWords, search
from api.questions import queries as questions
from tenancy.db import tenant_session
from tenancy.transactions import commit


class ToolProblem(Exception):
    """Bad input or a missing thing: the tool's error result says this message."""


READ_ONLY = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)

TOOLS: dict[str, tuple[type[args.Arguments], str, str]] = {
    "search_faq": (
        args.SearchFaq,
        "Search the FAQ",
        "Search this organization's FAQ for answers to a person's question. Returns the best "
        "matching questions, best first, each with a relevance score (0..1), a 'confident' flag "
        "(true when the match answers the question well enough to quote), a snippet and the "
        "help-center URL. Use it first for any question about the organization's product or "
        "policies; then get_question for the full answer.",
    ),
    "get_question": (
        args.GetQuestion,
        "Read one answer",
        "The full answer to one FAQ question, as Markdown, with its help-center URL to cite. "
        "Takes the id or slug that search_faq returned.",
    ),
    "list_categories": (
        args.ListCategories,
        "List FAQ categories",
        "The FAQ's categories (id, slug, name, parent), in the help center's order: to narrow "
        "search_faq by category or to show what topics the FAQ covers. With a publishable key, "
        "the categories the help center shows (those with published answers).",
    ),
    "create_draft": (
        args.CreateDraft,
        "Propose a new FAQ entry",
        "Propose a question and answer missing from the FAQ, or (with idOrSlug) a better "
        "answer to an existing question, as a draft for the organization's review; nothing is "
        "published. Use it only when search_faq found no confident answer or the answer is "
        "wrong, and the person asked for the FAQ to be improved.",
    ),
}


def allowed(caller: Caller, name: str) -> bool:
    """``create_draft`` needs a secret key with ``write``; the others, reading."""
    return caller.may("write") if name == "create_draft" else caller.reads


def listed(caller: Caller) -> list[types.Tool]:
    """The tools this caller may call (``create_draft`` needs a secret key with ``write``)."""
    tools = []
    for name, (model, title, description) in TOOLS.items():
        if not allowed(caller, name):
            continue
        annotations = (
            READ_ONLY
            if name != "create_draft"
            else types.ToolAnnotations(read_only_hint=False, destructive_hint=False)
        )
        tools.append(
            types.Tool(
                name=name,
                title=title,
                description=description,
                input_schema=args.schema(model),
                annotations=annotations,
            )
        )
    return tools


def locale_of(caller: Caller, asked: str | None) -> str:
    """The locale ``asked`` names, negotiated as the API's ``locale`` parameter is
    (``api.http.binding.served_locale``), else the org's default; a locale the org does not
    serve is the API's refusal (``validation_failed`` on ``locale``) as an error result."""
    try:
        return served_locale(caller.principal, asked).locale
    except ServiceError as error:
        enabled = ", ".join(caller.principal.locales)
        raise ToolProblem(f"{refusal(error)} Enabled locales: {enabled}.") from None


def refusal(error: ServiceError) -> str:
    """A domain refusal as an error result's text: its code and message, as REST answers
    them (issue 40: the same refusal at every door), then each field's issue."""
    detail = "; ".join(f"{d['field']}: {d['issue']}" for d in error.details)
    return f"{error.code}: {error.message}{' (' + detail + ')' if detail else ''}"


def help_center_root(caller: Caller) -> str | None:
    """``scheme://host/hc/{org}`` when the org's help center is on, else None (no pages)."""
    if caller.org.help_center.get("enabled") is not True:
        return None
    return f"{caller.base_url}/hc/{caller.org.slug}"


def page_url(caller: Caller, locale: str, question: dict[str, Any]) -> str | None:
    root = help_center_root(caller)
    if root is None or question.get("status") != content.PUBLISHED:
        return None
    return question_url(root, locale, question["slug"])


def result(data: Any, text: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=data,
    )


def problem(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


async def call(
    engine: AsyncEngine, caller: Caller, name: str, raw: dict[str, Any] | None
) -> types.CallToolResult:
    """Run tool ``name`` for ``caller``: its result, or an error result naming the problem."""
    entry = TOOLS.get(name)
    if entry is None or not allowed(caller, name):
        known = ", ".join(t.name for t in listed(caller))
        if entry is None:
            return problem(f"Unknown tool {name!r}. Tools available: {known}.")
        # The refusal REST gives the same key (a publishable key holds no secret scope).
        scope = "write" if name == "create_draft" else "read"
        refused = InsufficientScope(f"This operation requires the {scope!r} scope.")
        return problem(f"{refusal(refused)} Tools available: {known or 'none'}.")
    try:
        parsed = entry[0].model_validate(raw or {})
        return await _run(engine, caller, parsed)
    except ValidationError as error:
        return problem(args.problems(error))
    except ToolProblem as error:
        return problem(str(error))
    except ServiceError as error:
        return problem(refusal(error))


async def _run(engine: AsyncEngine, caller: Caller, parsed: args.Arguments) -> types.CallToolResult:
    session = tenant_session(engine, caller.org.schema_name)
    try:
        if isinstance(parsed, args.SearchFaq):
            return await _search(session, caller, parsed)
        if isinstance(parsed, args.GetQuestion):
            return await _get(session, caller, parsed)
        if isinstance(parsed, args.ListCategories):
            return await _categories(session, caller, parsed)
        assert isinstance(parsed, args.CreateDraft)
        return await _draft(session, caller, parsed)
    finally:
        await session.close()


async def _draft(session: Any, caller: Caller, parsed: args.CreateDraft) -> types.CallToolResult:
    if parsed.id_or_slug is not None:
        try:
            draft = await revise(
                session,
                caller.principal,
                parsed.id_or_slug,
                parsed.title,
                parsed.answer,
                parsed.category,
                parsed.audiences,
            )
        except QuestionNotFound:
            raise ToolProblem(f"idOrSlug: no question {parsed.id_or_slug!r} in this FAQ.") from None
        await commit(session)
        return result(
            {"draft": draft},
            f"A new version of {parsed.id_or_slug} saved as its draft for review; the "
            "published answer is unchanged.",
        )
    if parsed.title is None:
        raise ToolProblem("title: required for a new question (or give idOrSlug to revise one).")
    created = await create_draft(
        session, caller.principal, parsed.title, parsed.answer, parsed.category, parsed.audiences
    )
    await commit(session)
    return result(
        {"question": created},
        f"Draft {created['id']} ({created['slug']}) saved for review; it is not published.",
    )


async def _search(session: Any, caller: Caller, parsed: args.SearchFaq) -> types.CallToolResult:
    locale = locale_of(caller, parsed.locale)
    if parsed.category is not None:
        try:
            await categories.get_category(
                session, parsed.category, locale, audiences=reader_audiences(caller.principal)
            )
        except CategoryNotFound:
            raise ToolProblem(
                f"category: no category {parsed.category!r} (list_categories names them)."
            ) from None
    try:
        found = await search(
            session,
            query=parsed.query,
            locale=locale,
            limit=parsed.limit,
            category=parsed.category,
            reader=caller.principal,
        )
    except NoWords:
        raise ToolProblem(f"query: {parsed.query!r} has no word to search for.") from None
    items = []
    for hit in found:
        question = hit.question
        items.append(
            {
                "id": question["id"],
                "slug": question["slug"],
                "title": question["title"],
                "status": question["status"],
                "score": round(hit.score, 4),
                "confident": hit.confident,
                "snippet": hit.snippet,
                "url": page_url(caller, locale, question),
            }
        )
    lines = [
        f"{n}. {i['title']} (slug: {i['slug']}, score {i['score']:.2f}"
        f"{', confident' if i['confident'] else ''}){' ' + i['url'] if i['url'] else ''}"
        for n, i in enumerate(items, 1)
    ]
    text = "\n".join(lines) if lines else f"No question matches {parsed.query!r}."
    return result({"locale": locale, "results": items}, text)


async def _get(session: Any, caller: Caller, parsed: args.GetQuestion) -> types.CallToolResult:
    locale = locale_of(caller, parsed.locale)
    try:
        question = await questions.get_question(
            session,
            parsed.id_or_slug,
            locale,
            drafts=not caller.public,
            audiences=reader_audiences(caller.principal),
        )
    except QuestionNotFound:
        question = None
    if question is None or (caller.public and question["status"] != content.PUBLISHED):
        raise ToolProblem(
            f"idOrSlug: no question {parsed.id_or_slug!r} in this FAQ (search_faq finds them)."
        )
    url = page_url(caller, locale, question)
    markdown = question_markdown(question, url)
    data = {
        "id": question["id"],
        "slug": question["slug"],
        "title": question["title"],
        "status": question["status"],
        "locale": locale,
        "markdown": markdown,
        "url": url,
    }
    return result(data, markdown)


async def _categories(
    session: Any, caller: Caller, parsed: args.ListCategories
) -> types.CallToolResult:
    locale = locale_of(caller, parsed.locale)
    if caller.public:  # what the help center shows, no more (issue 41), of the reader's
        audiences = reader_audiences(caller.principal)
        items = await visibility.visible_categories(session, locale, audiences or ())
    else:  # as the API lists them: every category a draft may go to
        items, _ = await categories.list_categories(
            session, limit=visibility.MAX_CATEGORIES, after=None, q=None, locale=locale
        )
    listed_ = [
        {
            "id": c["id"],
            "slug": c["slug"],
            "name": c["name"],
            "description": c.get("description"),
            "parentId": c["parentId"],
            "questionCount": c["questionCount"],
        }
        for c in items
    ]
    text = "\n".join(f"- {c['name']} (slug: {c['slug']})" for c in listed_) or "No categories."
    return result({"locale": locale, "categories": listed_}, text)
