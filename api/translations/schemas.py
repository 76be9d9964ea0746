"""Request and response models of translations: the same length rules as the translated
resource's own fields (``api/questions/schemas.py``, ``api/categories/schemas.py``)."""

from __future__ import annotations

from typing import Literal

from api.categories.schemas import Description, Name
from api.questions.schemas import Answer, Title
from api.schemas import RequestBody, ResponseModel

TranslationStatus = Literal["draft", "published"]


class QuestionTranslationBody(RequestBody):
    title: Title
    answer: Answer
    status: TranslationStatus | None = None  # a new translation is a draft; None keeps it


class CategoryTranslationBody(RequestBody):
    name: Name
    description: Description | None = None


class QuestionTranslationOut(ResponseModel):
    locale: str  # BCP 47, canonical case
    title: str
    answer: str
    status: TranslationStatus
    outdated: bool  # the question's title or answer changed since this was last written
    created_at: str
    updated_at: str


class CategoryTranslationOut(ResponseModel):
    locale: str
    name: str
    description: str | None
    outdated: bool  # the category's name or description changed since this was last written
    created_at: str
    updated_at: str
