"""What agents read of a help center (issue 31), as text, no Quart: each published question as
Markdown (the Markdown twin of its page, the MCP server's ``get_question`` and resources),
``llms.txt`` (the llmstxt.org format: an H1 with the help center's title, a summary blockquote,
an H2 per top-level category the help center shows (``api.categories.visibility``) listing its
published questions, subcategories included, as
``[title](url): one-line summary``, ``summaries.summary``: clean sentences, tables and code
skipped, made off the event loop) and ``llms-full.txt`` (every published answer in Markdown).

Both files are bounded: at most ``MAX_LLMS_BYTES`` / ``MAX_FULL_BYTES``; past that the file
ends with a line saying it was cut and where the rest is (the sitemap). Questions are read in
batches by keyset (``content.published_slugs``'s way), never all at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import and_, func, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from api.audiences.visibility import Audiences
from api.categories import visibility
from api.helpcenter import content
from api.helpcenter.render import DOCUMENTS, off_loop
from api.helpcenter.summaries import SUMMARY_CHARS, summary
from api.questions import queries as questions
from api.questions.models import Question

MAX_LLMS_BYTES = 512 * 1024  # llms.txt: an index, meant to fit an assistant's context
MAX_FULL_BYTES = 8 * 1024 * 1024  # llms-full.txt
BATCH = 200  # questions read per query (llms.txt: the start of each answer only)
FULL_BATCH = 50  # llms-full.txt: whole answers, up to 100,000 characters each
SUMMARY_SOURCE = 4 * SUMMARY_CHARS  # characters of an answer read for its summary
MARKDOWN = "text/markdown; charset=utf-8"
TEXT = "text/plain; charset=utf-8"


def question_url(root: str, locale: str, slug: str) -> str:
    """The help-center page of a question (``root``: ``scheme://host/hc/{org}``)."""
    return f"{root}/{locale}/questions/{slug}"


def question_markdown(question: dict[str, Any], url: str | None) -> str:
    """A question as Markdown: its title as H1, its answer (already Markdown), its page."""
    title = " ".join(str(question["title"]).split())
    text = f"# {title}\n\n{str(question['answer']).strip()}\n"
    if url is not None:
        text += f"\nSource: <{url}>\n"
    return text


def summaries(answers: list[str]) -> list[str]:
    """The summary of each answer's start (``SUMMARY_SOURCE`` characters read: one that long
    may have been cut)."""
    return [summary(a, cut=len(a) >= SUMMARY_SOURCE) for a in answers]


def _link_text(title: str) -> str:
    return " ".join(title.replace("[", "(").replace("]", ")").split())


def _served(locale: str, answer_chars: int | None, audiences: Audiences) -> Any:
    served = {c.key: c for c in questions.SERVED_COLUMNS}
    on = and_(
        questions.SERVED.question_id == Question.id, questions.SERVED.locale == literal(locale)
    )
    answer = served["answer"]
    if answer_chars is not None:  # what a summary needs, not a whole answer (100,000 chars)
        answer = func.left(answer, answer_chars).label("answer")
    return (
        select(
            Question.id,
            Question.slug,
            Question.category_id,
            served["title"],
            answer,
        )
        .select_from(Question)
        .outerjoin(questions.SERVED, on)
        .where(*content.readable(audiences))
    )


async def published(
    session: AsyncSession,
    locale: str,
    *,
    answer_chars: int | None = None,
    batch: int = BATCH,
    audiences: Audiences = content.ANONYMOUS,
) -> AsyncIterator[list[Any]]:
    """Every published question served in ``locale`` that readers of ``audiences`` may read
    (issue 39: the anonymous reader's by default) (id, slug, category_id, title, answer: its
    first ``answer_chars`` when given), in batches of ``batch`` by id."""
    after: str | None = None
    while True:
        stmt = _served(locale, answer_chars, audiences).order_by(Question.id).limit(batch)
        if after is not None:
            stmt = stmt.where(Question.id > after)
        rows = (await session.execute(stmt)).all()
        if not rows:
            return
        yield list(rows)
        if len(rows) < batch:
            return
        after = rows[-1].id


class Bounded:
    """Text gathered up to ``limit`` bytes (UTF-8); past it, ``full`` is set and nothing more
    is kept."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.size = 0
        self.full = False

    def add(self, text: str) -> bool:
        size = len(text.encode())
        if self.full or self.size + size > self.limit:
            self.full = True
            return False
        self.parts.append(text)
        self.size += size
        return True

    def text(self, cut_note: str, *, cut: bool = False) -> str:
        """The text; when it was cut (or ``cut``: the caller left some out), ``cut_note`` at
        its end, still within ``limit``."""
        if not (self.full or cut):
            return "".join(self.parts)
        room = self.limit - len(cut_note.encode())
        while self.parts and self.size > room:
            self.size -= len(self.parts.pop().encode())
        return "".join(self.parts) + cut_note


def _top_of(categories: list[dict[str, Any]]) -> dict[str, str]:
    """Each category id -> the id of its top-level ancestor."""
    by_id = {c["id"]: c for c in categories}
    top: dict[str, str] = {}
    for item in categories:
        chain = content.ancestors(categories, item["id"])
        top[item["id"]] = chain[0]["id"] if chain else item["id"]
    return {k: v for k, v in top.items() if v in by_id}


def header(title: str, description: str) -> str:
    return f"# {_link_text(title)}\n\n> {' '.join(description.split())}\n\n"


async def llms_txt(
    session: AsyncSession,
    *,
    title: str,
    root: str,
    locale: str,
    limit: int = MAX_LLMS_BYTES,
) -> str:
    """``llms.txt`` of the help center in ``locale``: an H2 per top-level category (in the
    categories' order) with its published questions, subcategories included."""
    categories = await visibility.visible_categories(session, locale)  # the help center's
    top = _top_of(categories)
    sections: dict[str, list[str]] = {
        c["id"]: [] for c in categories if top.get(c["id"]) == c["id"]
    }
    budget = limit
    async for batch in published(session, locale, answer_chars=SUMMARY_SOURCE):
        # Parsing Markdown is CPU work: off the loop, a batch at a time.
        said = await off_loop(DOCUMENTS, summaries, [row.answer for row in batch])
        for row, text in zip(batch, said, strict=True):
            link = f"- [{_link_text(row.title)}]({question_url(root, locale, row.slug)}.md)"
            line = f"{link}: {text}\n" if text else f"{link}\n"
            budget -= len(line.encode())
            if budget < 0:
                break
            sections.setdefault(top.get(row.category_id, ""), []).append(line)
        if budget < 0:
            break
    names = {c["id"]: c["name"] for c in categories}
    out = Bounded(limit)
    out.add(
        header(
            title,
            f"Answers of {title}: each published question links to its answer as Markdown. "
            f"Every answer in one file: {root}/{locale}/llms-full.txt",
        )
    )
    for category_id, lines in sections.items():
        if not lines:
            continue
        if not out.add(f"## {_link_text(names.get(category_id, 'Other'))}\n\n"):
            break
        for line in lines:
            if not out.add(line):
                break
        out.add("\n")
    note = f"\n(Cut at {limit} bytes: every question is in {root}/sitemap.xml.)\n"
    return out.text(note, cut=budget < 0)


async def llms_full_txt(
    session: AsyncSession,
    *,
    title: str,
    root: str,
    locale: str,
    limit: int = MAX_FULL_BYTES,
) -> str:
    """``llms-full.txt``: every published answer in ``locale`` as Markdown, by id."""
    out = Bounded(limit)
    out.add(header(title, f"Every published answer of {title}, in Markdown."))
    async for batch in published(session, locale, batch=FULL_BATCH):
        for row in batch:
            page = {"title": row.title, "answer": row.answer}
            text = question_markdown(page, question_url(root, locale, row.slug))
            if not out.add("#" + text + "\n"):
                break
        if out.full:
            break
    return out.text(f"\n(Cut at {limit} bytes: every question is in {root}/sitemap.xml.)\n")
