"""HTTP routes of translations: ``/questions/{idOrSlug}/translations[/{locale}]`` and
``/categories/{idOrSlug}/translations[/{locale}]`` (issue 15)."""

from __future__ import annotations

from typing import Any

from quart import Blueprint
from quart_schema import document_response, validate_request

from api.errors import TranslationNotFound
from api.http import conditional_locks as locks
from api.http.binding import current_org, db, requires_scope
from api.http.conditional import conditional
from api.schemas import Envelope
from api.translations import service
from api.translations.schemas import (
    CategoryTranslationBody,
    CategoryTranslationOut,
    QuestionTranslationBody,
    QuestionTranslationOut,
)

translations = Blueprint("translations", __name__)
Result = tuple[dict[str, Any], int]
QUESTION = "/questions/<ref>/translations"
CATEGORY = "/categories/<ref>/translations"


@translations.get(QUESTION)
@requires_scope("read")
@document_response(Envelope[list[QuestionTranslationOut]])
async def list_question_translations(ref: str) -> Result:
    """The question's translations, by locale."""
    return {"data": await service.list_question_translations(db(), ref)}, 200


@translations.get(f"{QUESTION}/<locale>")
@requires_scope("read")
@document_response(Envelope[QuestionTranslationOut])
async def get_question_translation(ref: str, locale: str) -> Result:
    """The question's translation in an enabled locale."""
    return {"data": await service.get_question_translation(db(), current_org(), ref, locale)}, 200


@translations.put(f"{QUESTION}/<locale>")
@requires_scope("write")
@validate_request(QuestionTranslationBody)
@document_response(Envelope[QuestionTranslationOut], 201)
@document_response(Envelope[QuestionTranslationOut], 200)
@conditional(locks.QUESTION_TRANSLATION, absent=(TranslationNotFound,))
async def put_question_translation(ref: str, locale: str, data: QuestionTranslationBody) -> Result:
    """Create (201) or replace (200) the question's translation in an enabled locale other
    than its own; a new translation is a draft unless ``status`` says otherwise."""
    fields = {"title": data.title, "answer": data.answer}
    public, created = await service.put_question_translation(
        db(), current_org(), ref, locale, fields, data.status
    )
    return {"data": public}, 201 if created else 200


@translations.delete(f"{QUESTION}/<locale>")
@requires_scope("write")
@conditional(locks.QUESTION_TRANSLATION)
async def delete_question_translation(ref: str, locale: str) -> tuple[str, int]:
    """Delete the question's translation in a locale."""
    await service.delete_question_translation(db(), current_org(), ref, locale)
    return "", 204


@translations.get(CATEGORY)
@requires_scope("read")
@document_response(Envelope[list[CategoryTranslationOut]])
async def list_category_translations(ref: str) -> Result:
    """The category's translations, by locale."""
    return {"data": await service.list_category_translations(db(), ref)}, 200


@translations.get(f"{CATEGORY}/<locale>")
@requires_scope("read")
@document_response(Envelope[CategoryTranslationOut])
async def get_category_translation(ref: str, locale: str) -> Result:
    """The category's translation in an enabled locale."""
    return {"data": await service.get_category_translation(db(), current_org(), ref, locale)}, 200


@translations.put(f"{CATEGORY}/<locale>")
@requires_scope("write")
@validate_request(CategoryTranslationBody)
@document_response(Envelope[CategoryTranslationOut], 201)
@document_response(Envelope[CategoryTranslationOut], 200)
@conditional(locks.CATEGORY_TRANSLATION, absent=(TranslationNotFound,))
async def put_category_translation(ref: str, locale: str, data: CategoryTranslationBody) -> Result:
    """Create (201) or replace (200) the category's translation in an enabled locale other
    than its own (written to the category audit log)."""
    fields = {"name": data.name, "description": data.description}
    public, created = await service.put_category_translation(
        db(), current_org(), ref, locale, fields
    )
    return {"data": public}, 201 if created else 200


@translations.delete(f"{CATEGORY}/<locale>")
@requires_scope("write")
@conditional(locks.CATEGORY_TRANSLATION)
async def delete_category_translation(ref: str, locale: str) -> tuple[str, int]:
    """Delete the category's translation in a locale."""
    await service.delete_category_translation(db(), current_org(), ref, locale)
    return "", 204
