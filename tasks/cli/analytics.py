"""``faq analytics SLUG``: an org's content analytics of the last 30 days for ops in a
terminal (issue 17): top searches, searches that found nothing and the least helpful answers
(most unhelpful votes), as plain-text tables with aligned columns, each row with a sparkline
of its daily trend (oldest day left), then the readers by audience (issue 39: searches and
views of each audience, ``(no audience)`` for anonymous readers). Read from the daily
aggregates, as the API does.

``faq analytics gaps SLUG`` (issue 38): the content gaps and suggested synonyms of the last 30
days (``GET /analytics/gaps``), as two tables; a suggestion is accepted through the API."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tasks.cli.runner import run_with_engine

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

BARS = "▁▂▃▄▅▆▇█"
TEXT_WIDTH = 40  # a longer query, slug or reason is cut with "…"


def sparkline(values: Sequence[int]) -> str:
    """One bar per value, scaled to the largest: zero is the lowest bar, any count above it
    at least the second."""
    top = max(values, default=0)
    if top <= 0:
        return BARS[0] * len(values)
    last = len(BARS) - 1
    return "".join(BARS[0 if v <= 0 else max(1, round(v / top * last))] for v in values)


def _cut(value: str) -> str:
    return value if len(value) <= TEXT_WIDTH else value[: TEXT_WIDTH - 1] + "…"


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{round(share * 100)}%"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Columns two spaces apart, as wide as their widest cell; numbers right-aligned, text
    (and headers) left-aligned; ``(none)`` for no rows."""
    if not rows:
        return ["(none)"]
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    numeric = [all(isinstance(row[i], int) for row in rows) for i in range(len(headers))]

    def line(values: Sequence[str], align: Sequence[bool]) -> str:
        columns = zip(values, widths, align, strict=True)
        parts = [v.rjust(w) if right else v.ljust(w) for v, w, right in columns]
        return "  ".join(parts).rstrip()

    return [line(headers, [False] * len(headers)), *(line(r, numeric) for r in cells)]


async def analytics_report(engine: AsyncEngine, slug: str, limit: int) -> list[str]:
    """The report's lines; ``tenancy.orgs.OrgNotFound`` for no such org."""
    from api.analytics import service
    from tenancy.clock import utcnow
    from tenancy.db import tenant_session
    from tenancy.orgs import get_org

    org = await get_org(engine, slug)
    span = service.window(None, None, utcnow().date())
    async with tenant_session(engine, org.schema_name) as session:
        searches = await service.search_analytics(session, span, locale=None, limit=limit)
        top, none = searches["topQueries"], searches["noResults"]
        questions = await service.questions_analytics(session, span, sort="unhelpful", limit=limit)
        least = [q for q in questions["questions"] if q["unhelpful"] > 0]
        top_trends = await service.daily_trends(
            session, span, "searches", [q["query"] for q in top]
        )
        none_trends = await service.daily_trends(
            session, span, "no_results", [q["query"] for q in none]
        )
        least_trends = await service.daily_trends(
            session, span, "unhelpful", [q["questionId"] for q in least]
        )
        await session.rollback()
    lines = [f"Analytics of {org.slug}: {span.since} to {span.until} (UTC)", ""]
    lines += ["Top searches"]
    lines += render_table(
        ["QUERY", "SEARCHES", "CLICKS", "CTR", "TREND"],
        [
            [
                _cut(q["query"]),
                q["searches"],
                q["clicks"],
                _percent(q["clickThroughRate"]),
                sparkline(top_trends[q["query"]]),
            ]
            for q in top
        ],
    )
    lines += ["", "Searches with no results"]
    lines += render_table(
        ["QUERY", "SEARCHES", "TREND"],
        [[_cut(q["query"]), q["searches"], sparkline(none_trends[q["query"]])] for q in none],
    )
    lines += ["", "Least helpful answers"]
    lines += render_table(
        ["QUESTION", "VIEWS", "HELPFUL", "UNHELPFUL", "SHARE", "REASON", "TREND"],
        [
            [
                _cut(q["slug"]),
                q["views"],
                q["helpful"],
                q["unhelpful"],
                _percent(q["helpfulShare"]),
                _top_reason(q["unhelpfulReasons"]),
                sparkline(least_trends[q["questionId"]]),
            ]
            for q in least
        ],
    )
    lines += ["", "Readers by audience"]
    lines += render_table(
        ["AUDIENCE", "SEARCHES", "NO RESULTS", "VIEWS"],
        _by_audience(searches["byAudience"], questions["byAudience"]),
    )
    return lines


def _by_audience(searches: list[dict[str, Any]], views: list[dict[str, Any]]) -> list[list[Any]]:
    """One row per audience of either list: most searches, then most views first."""
    rows: dict[str | None, list[Any]] = {}
    for s in searches:
        rows[s["audience"]] = [s["searches"], s["noResults"], 0]
    for v in views:
        rows.setdefault(v["audience"], [0, 0, 0])[2] = v["views"]
    ordered = sorted(rows.items(), key=lambda kv: (-kv[1][0], -kv[1][2], kv[0] or ""))
    return [[_cut(a) if a is not None else "(no audience)", *n] for a, n in ordered]


def _top_reason(reasons: list[dict[str, Any]]) -> str:
    if not reasons:
        return "-"
    return f"{_cut(reasons[0]['reason'])} ({reasons[0]['count']})"


async def gaps_lines(engine: AsyncEngine, slug: str, limit: int) -> list[str]:
    """The gaps report's lines; ``tenancy.orgs.OrgNotFound`` for no such org."""
    from api.analytics import gaps, service
    from tenancy.clock import utcnow
    from tenancy.db import tenant_session
    from tenancy.orgs import get_org

    org = await get_org(engine, slug)
    span = service.window(None, None, utcnow().date())
    async with tenant_session(engine, org.schema_name) as session:
        report = await gaps.gaps_report(session, span, locale=None, limit=limit)
        await session.rollback()
    lines = [f"Gaps of {org.slug}: {span.since} to {span.until} (UTC)", ""]
    lines += ["Content gaps (searches that found nothing)"]
    lines += render_table(
        ["QUERY", "LOCALE", "SEARCHES", "QUERIES", "EXAMPLES"],
        [
            [
                _cut(g["query"]),
                g["locale"],
                g["searches"],
                g["queries"],
                _cut("; ".join(e["query"] for e in g["examples"][1:]) or "-"),
            ]
            for g in report["contentGaps"]
        ],
    )
    lines += ["", "Suggested synonyms (accept: POST /analytics/gaps/suggestions/ID/accept)"]
    lines += render_table(
        ["ID", "LOCALE", "MEMBERS", "SEARCHES"],
        [
            [s["id"], s["locale"], _cut(" = ".join(s["members"])), s["searches"]]
            for s in report["suggestedSynonyms"]
        ],
    )
    return lines


def cmd_analytics(args: argparse.Namespace) -> int:
    from tenancy.orgs import OrgNotFound

    # ``faq analytics gaps SLUG``: the second word names the org.
    gaps_of = args.slug == "gaps" and args.org is not None
    slug = args.org if gaps_of else args.slug
    if args.org is not None and not gaps_of:
        print(f"unknown report {args.slug!r} (try: faq analytics gaps SLUG)", file=sys.stderr)
        return 2

    async def work(engine: AsyncEngine) -> list[str]:
        if gaps_of:
            return await gaps_lines(engine, slug, args.limit)
        return await analytics_report(engine, slug, args.limit)

    try:
        lines = run_with_engine(work)
    except OrgNotFound:
        print(f"no org {slug!r}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0
