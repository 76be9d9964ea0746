"""The input of each MCP tool: pydantic models whose JSON Schemas ``tools/list`` publishes and
which check every call (a failure names the argument and what is wrong with it)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MAX_QUERY = 200
MAX_RESULTS = 20
MAX_REF = 200


class Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, str_strip_whitespace=True)


Locale = Annotated[
    str | None,
    Field(
        default=None,
        min_length=1,
        max_length=35,
        description=(
            "BCP 47 tag of one of the organization's locales (e.g. 'en', 'fr-CA'), as the "
            "API's locale parameter: the text is served in it (a question without a "
            "translation in it in its own language); another locale is refused. Default: the "
            "organization's default locale."
        ),
    ),
]


class SearchFaq(Arguments):
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY,
        description=(
            "What the person asked, in their words (a question or a few keywords); "
            "every word must match, word prefixes count."
        ),
    )
    locale: Locale = None
    limit: int = Field(
        default=5, ge=1, le=MAX_RESULTS, description=f"Results to return, 1 to {MAX_RESULTS}."
    )
    category: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_REF,
        description="Only questions of this category (its slug or id, from list_categories).",
    )


class GetQuestion(Arguments):
    id_or_slug: str = Field(
        alias="idOrSlug",
        min_length=1,
        max_length=MAX_REF,
        description="The question's id (q_…) or slug, as search_faq returned it.",
    )
    locale: Locale = None


class ListCategories(Arguments):
    locale: Locale = None


class CreateDraft(Arguments):
    title: str | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        description=(
            "The question, as a reader would ask it. Required for a new question; for "
            "idOrSlug, a new title (else the title stays)."
        ),
    )
    answer: str = Field(
        min_length=1,
        max_length=100_000,
        description="The proposed answer in Markdown; a person reviews it before publishing.",
    )
    id_or_slug: str | None = Field(
        default=None,
        alias="idOrSlug",
        min_length=1,
        max_length=MAX_REF,
        description=(
            "To propose a better answer to an existing question: its id or slug (the "
            "published answer stays until the draft is reviewed and published)."
        ),
    )
    category: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_REF,
        description="Category slug or id (from list_categories); default: the default category.",
    )
    audiences: list[str] | None = Field(
        default=None,
        max_length=20,
        description=(
            "Audience slugs the entry is for (empty: everyone); for idOrSlug, new audiences "
            "(else they stay). Reviewed with the rest of the draft."
        ),
    )


def schema(model: type[Arguments]) -> dict[str, Any]:
    """The model's JSON Schema as a tool's ``inputSchema`` (by alias, no titles)."""
    found = model.model_json_schema(by_alias=True)
    found.pop("title", None)
    for prop in found.get("properties", {}).values():
        prop.pop("title", None)
    return found


def problems(error: ValidationError) -> str:
    """What is wrong with the arguments, one clause per argument, named as sent."""
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        message = (
            "is not an argument of this tool" if item["type"] == "extra_forbidden" else item["msg"]
        )
        parts.append(f"{where}: {message}")
    return "Invalid arguments: " + "; ".join(parts) + "."
