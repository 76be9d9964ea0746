"""Request and response models of answers and synonyms."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from api.questions.schemas import LocaleTag, QuestionOut
from api.schemas import QueryArgs, RequestBody, ResponseModel

MAX_GROUPS = 5_000  # the largest plan's cap (``billing.plans``); the plan's own is checked after


class AnswersQuery(QueryArgs):
    q: str = Field(min_length=1, max_length=500)
    limit: int = Field(default=5, ge=1, le=20)
    # The language to serve (else Accept-Language; api/http/binding.py negotiates it).
    locale: LocaleTag | None = None
    # A category id or slug: answers from it and the categories under it.
    category: str | None = Field(default=None, max_length=200)


class Snippet(ResponseModel):
    title: str
    answer: str


class AnswerOut(ResponseModel):
    question: QuestionOut
    score: float
    confident: bool
    snippet: Snippet


class SimilarQuery(QueryArgs):
    limit: int = Field(default=5, ge=1, le=20)
    locale: LocaleTag | None = None


class SimilarOut(ResponseModel):
    question: QuestionOut
    score: float


class SynonymsQuery(QueryArgs):
    locale: LocaleTag | None = None


Member = Annotated[str, Field(min_length=1, max_length=100)]


class SynonymsUpdate(RequestBody):
    locale: LocaleTag | None = None
    groups: list[Annotated[list[Member], Field(max_length=20)]] = Field(max_length=MAX_GROUPS)


class SynonymsOut(ResponseModel):
    locale: str
    groups: list[list[str]]
    updated_at: str | None


GroupId = Annotated[str, Field(min_length=1, max_length=64)]


class LexiconUpdate(RequestBody):
    locale: LocaleTag | None = None
    # The ids of the support lexicon's groups to switch off in the locale (all others on).
    disabled: list[GroupId] = Field(max_length=100)


class LexiconGroupOut(ResponseModel):
    id: str
    members: list[str]
    enabled: bool


class LexiconOut(ResponseModel):
    locale: str
    language: str
    groups: list[LexiconGroupOut]
    disabled: list[str]
    updated_at: str | None
