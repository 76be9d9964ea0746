"""What an import's items refer to (split from ``writer.py``): the sources already imported
(``external_refs``: each source item's resource, read for a batch at once and written at its
end) and the links between imported resources (``api/imports/links.py``), put to their
help-center pages when written, or at the end of the import for targets later in the file.
``Writer`` holds the state; these are its methods about references."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from sqlalchemy import select, tuple_
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from api.categories import service as categories
from api.categories.models import Category
from api.external_ids import ExternalRef
from api.imports.items import CategoryItem, Item, Note, QuestionItem, TranslationItem
from api.imports.links import Link, Target, destination, kept_issue, page_url
from api.imports.report import Report
from api.imports.source_times import SourceTimes
from api.questions import service as questions
from api.questions.batch import NewQuestions
from api.questions.models import Question
from api.translations import service as translations
from api.translations.models import QuestionTranslation
from tenancy.errors import ServiceError
from tenancy.principal import Principal

# Links to resources later in the file, held until the last batch is written (each a few
# hundred bytes); past this many, a link keeps its source URL and is reported.
MAX_DEFERRED_LINKS = 20_000


@dataclasses.dataclass(frozen=True)
class DeferredLink:
    """A link whose target was not written yet when its item was: its source href is in the
    stored answer (as ``dest``) until ``References.relink`` puts the target's page there."""

    kind: str  # question | translation
    source: str  # the question's external id (a translation's: the translated question's)
    locale: str  # of the page linked to (the translation's, or the org's default)
    link: Link
    dest: str  # the href as written in the Markdown
    updated_at: datetime | None  # the source's time of its answer, kept after the rewrite


def _relinked(markdown: str, new: dict[str, str]) -> str:
    """``markdown`` with each link destination of ``new`` (as ``References._linked`` wrote it:
    ``](dest)``, ``](dest "title")``, a definition's ``]: dest``) replaced by its page."""
    markdown += "\n"  # a definition on the last line ends as the others do
    for dest, url in new.items():
        for end in (")", " ", "\n"):
            markdown = markdown.replace(f"]({dest}{end}", f"]({url}{end}")
            markdown = markdown.replace(f"]: {dest}{end}", f"]: {url}{end}")
    return markdown[:-1]


class References:
    """The ``Writer``'s sources and links (its state: see ``Writer.__init__``)."""

    org: Principal
    report: Report
    touched: set[str]
    deferred: list[DeferredLink]
    times: SourceTimes
    _refs: dict[tuple[str, str], str | None]
    _pending: dict[tuple[str, str], str]
    _new: NewQuestions

    async def _prefetch(self, session: AsyncSession, items: list[Item]) -> None:
        self._pending = {}
        wanted: set[tuple[str, str]] = set()
        for item in items:
            if isinstance(item, CategoryItem):
                wanted.add(("category", item.source))
            elif isinstance(item, QuestionItem):
                wanted.add(("question", item.source))
            elif isinstance(item, TranslationItem):
                wanted.add((item.kind, item.source))
        self._refs = dict.fromkeys(wanted)
        if not wanted:
            return
        rows = await session.execute(
            select(ExternalRef.kind, ExternalRef.external_id, ExternalRef.resource_id).where(
                tuple_(ExternalRef.kind, ExternalRef.external_id).in_(sorted(wanted))
            )
        )
        for kind, source, resource_id in rows:
            self._refs[(kind, source)] = resource_id

    async def _flush_refs(self, session: AsyncSession) -> None:
        if not self._pending:
            return
        stmt = insert(ExternalRef).values(
            [
                {"kind": kind, "external_id": source, "resource_id": id_}
                for (kind, source), id_ in sorted(self._pending.items())
            ]
        )
        await session.execute(
            stmt.on_conflict_do_update(
                index_elements=[ExternalRef.kind, ExternalRef.external_id],
                set_={"resource_id": stmt.excluded.resource_id},
            )
        )
        self._pending = {}

    # ---- links between imported resources (``api/imports/links.py``) ------------------------

    async def _pages(self, session: AsyncSession, targets: set[Target]) -> dict[Target, str]:
        """The slug of each target written (committed, or in this transaction: a question of
        this batch's bulk create is flushed first), by target."""
        ids: dict[Target, str] = {}
        unknown: set[tuple[str, str]] = set()
        for target in targets:
            key = (target.ref_kind, target.source)
            if key in self._refs:  # this batch's: known, or known to be new
                if self._refs[key] is not None:
                    ids[target] = self._refs[key]  # type: ignore[assignment]
            else:
                unknown.add(key)
        if unknown:
            rows = await session.execute(
                select(ExternalRef.kind, ExternalRef.external_id, ExternalRef.resource_id).where(
                    tuple_(ExternalRef.kind, ExternalRef.external_id).in_(sorted(unknown))
                )
            )
            found = {(kind, source): id_ for kind, source, id_ in rows}
            for target in targets:
                id_ = found.get((target.ref_kind, target.source))
                if id_ is not None:
                    ids[target] = id_
        if any(id_ in self._new for id_ in ids.values()):
            await self._new.flush(session, self.org)
        slugs: dict[str, str] = {}
        for kind, model in (("question", Question), ("category", Category)):
            wanted = sorted({id_ for t, id_ in ids.items() if t.kind == kind})
            if wanted:
                live = categories.LIVE if kind == "category" else Question.deleted_at.is_(None)
                pages = await session.execute(
                    select(model.id, model.slug).where(model.id.in_(wanted), live)
                )
                slugs.update({id_: slug for id_, slug in pages})
        return {t: slugs[id_] for t, id_ in ids.items() if id_ in slugs}

    async def _linked(
        self,
        session: AsyncSession,
        markdown: str,
        links: list[Link],
        kind: str,
        source: str,
        locale: str,
        updated_at: datetime | None,
    ) -> str:
        """``markdown`` with a URL in each link's placeholder: the target's page when it is
        written already, else the source's href (and the link deferred to ``relink``)."""
        pages = await self._pages(session, {link.target for link in links})
        for link in links:
            slug = pages.get(link.target)
            if slug is not None:
                url = page_url(self.org.slug, locale, link.target.kind, slug, link.fragment)
            else:
                url = destination(link.href)
                if len(self.deferred) < MAX_DEFERRED_LINKS:
                    self.deferred.append(DeferredLink(kind, source, locale, link, url, updated_at))
                else:
                    self.report.warn(Note(source, "answer", kept_issue(link.href)))
            markdown = markdown.replace(link.placeholder, url)
        return markdown

    async def relink(self, session: AsyncSession, deferred: list[DeferredLink]) -> None:
        """The deferred links' targets put in their answers now that every batch is written,
        through the services (a question gets one revision for it, its source's update time
        kept); a target still unknown was not imported: its link stays, reported."""
        pages = await self._pages(session, {d.link.target for d in deferred})
        by_answer: dict[tuple[str, str, str], list[DeferredLink]] = {}
        for d in deferred:
            by_answer.setdefault((d.kind, d.source, d.locale), []).append(d)
        for (kind, source, locale), links in by_answer.items():
            new: dict[str, str] = {}
            for d in links:
                slug = pages.get(d.link.target)
                if slug is None:
                    self.report.warn(Note(source, "answer", kept_issue(d.link.href)))
                else:
                    target = d.link.target
                    new[d.dest] = page_url(
                        self.org.slug, locale, target.kind, slug, d.link.fragment
                    )
            if not new:
                continue
            try:
                async with session.begin_nested():
                    await self._rewrite(session, kind, source, locale, new, links[0].updated_at)
            except ServiceError as exc:
                issue = f"links not rewritten: {exc.code}: {exc.message}"
                self.report.warn(Note(source, "answer", issue))
        await self.times.flush(session)

    async def _rewrite(
        self,
        session: AsyncSession,
        kind: str,
        source: str,
        locale: str,
        new: dict[str, str],
        updated_at: datetime | None,
    ) -> None:
        id_ = await self._ref(session, "question", source)
        if id_ is None:
            return
        question = (
            await session.execute(
                select(Question).where(Question.id == id_, Question.deleted_at.is_(None))
            )
        ).scalar_one_or_none()
        if question is None:
            return
        if kind == "question":
            answer = _relinked(question.answer, new)
            if answer != question.answer:
                await questions.update_question(session, self.org, id_, {"answer": answer})
                self.touched.add(id_)
                if updated_at is not None:
                    self.times.resources[("question", id_)] = (None, updated_at)
            return
        translation = (
            await session.execute(
                select(QuestionTranslation).where(
                    QuestionTranslation.question_id == id_, QuestionTranslation.locale == locale
                )
            )
        ).scalar_one_or_none()
        if translation is None:
            return
        answer = _relinked(translation.answer, new)
        if answer != translation.answer:
            await translations.write_question_translation(
                session,
                self.org,
                id_,
                locale,
                {"title": translation.title, "answer": answer},
                None,
                translations.question_digest(question),
            )
            self.touched.add(id_)
            if updated_at is not None:
                self.times.translations[("question", id_, locale)] = (None, updated_at)

    # ---- sources ----------------------------------------------------------------------------

    async def _ref(self, session: AsyncSession, kind: str, source: str) -> str | None:
        if (kind, source) in self._refs:
            return self._refs[(kind, source)]
        return (
            await session.execute(
                select(ExternalRef.resource_id).where(
                    ExternalRef.kind == kind, ExternalRef.external_id == source
                )
            )
        ).scalar_one_or_none()

    async def _remember(self, session: AsyncSession, kind: str, source: str, id_: str) -> None:
        """Written with the batch's others (``_flush_refs``); known to its later items now."""
        self._pending[(kind, source)] = id_
        self._refs[(kind, source)] = id_
        self.touched.add(id_)

    def _link_key(self, item: QuestionItem, id_: str) -> None:
        """What links name the question by, when not its source (a Help Scout article's
        number): an ``external_refs`` row of kind ``link``, written with the batch's refs."""
        if item.link_key is not None and self._refs.get(("link", item.link_key)) != id_:
            self._pending[("link", item.link_key)] = id_
            self._refs[("link", item.link_key)] = id_
