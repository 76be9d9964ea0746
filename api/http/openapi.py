"""The OpenAPI document: quart-schema's, opened by an overview (``openapi_overview.py``), with
summaries and descriptions from the views' docstrings (``openapi_text.py``), the error
responses every operation can give and an example of every request body
(``openapi_examples.py``)."""

from __future__ import annotations

import inspect
from typing import Any

from pydantic import TypeAdapter
from quart_schema import OpenAPIProvider
from werkzeug.routing import Rule

from api.audit.docs import document_export
from api.http.conditional_docs import conditional_operations, document_conditional
from api.http.openapi_examples import ERROR_EXAMPLES, REQUEST_EXAMPLES, error_example
from api.http.openapi_overview import OVERVIEW
from api.http.openapi_text import summary_and_description
from api.schemas import ErrorBody

ERROR_STATUSES = {
    "400": "Invalid input (validation_failed, validation_error, invalid_json, …)",
    "401": "Missing, unknown, revoked or expired API key",
    "402": "The plan's cap is reached",
    "403": "Insufficient scope, or a plan below STARTER",
    "404": "Unknown org, resource or route",
    "405": "Method not allowed",
    "409": "Conflict (slug_conflict, category_not_empty, last_admin_key, …)",
    "413": "Request body too large",
    "422": "Idempotency key reused with another body",
    "429": "Rate limited (see Retry-After)",
    "500": "Unexpected error",
    "503": "A dependency (PostgreSQL) is unavailable; retry",
}


# Sections of the docs page, in this order (Swagger UI groups operations by their first tag).
TAGS = {
    "categories": "Categories: a tree of them per organization",
    "questions": "Questions, their revisions and search",
    "webhooks": "Webhooks and their deliveries",
    "billing": "The plan, Stripe checkout and portal, Stripe's events",
    "settings": "The organization's settings: its locales",
    "translations": "Translation files (XLIFF 1.2) of every question and category",
    "keys": "API keys: secret keys (read, write, admin) and publishable keys (public)",
    "audit": "The organization's audit log: every change of every resource; NDJSON export",
    "analytics": "Content analytics: readers' searches, question views and votes (read)",
    "operations": "Health, readiness and metrics",
}

BEARER = (
    "An API key: `Authorization: Bearer <key>`. Secret keys (`faq_…`) carry read, write, "
    "review or admin (admin includes write and review; write and review include read); keep "
    "them on a server. A publishable "
    "key (`faq_pk_…`, scope `public` alone) may be used in a browser: it reads categories and "
    "published questions (lists, single reads, search, published translations), anything else "
    "is 403 `insufficient_scope`; requests from its `allowedOrigins` get CORS headers, and it is "
    "rate limited per key and per client address."
)


def tag_of(path: str) -> str:
    """``/api/v1/{org}/categories/…`` is categories; ``/billing/stripe/webhook`` billing."""
    parts = path.strip("/").split("/")
    resource = parts[3] if parts[:2] == ["api", "v1"] and len(parts) > 3 else parts[0]
    return resource if resource in TAGS else "operations"


class FaqOpenAPIProvider(OpenAPIProvider):
    def build_paths(self, rule: Rule) -> tuple[dict[str, Any], dict[str, Any]]:
        """quart-schema's, with the summary one whole sentence of the docstring (its first
        line could stop mid-sentence) and the rest of the docstring as the description."""
        paths, components = super().build_paths(rule)
        docstring = inspect.getdoc(self._app.view_functions[rule.endpoint])
        if docstring:
            summary, description = summary_and_description(docstring)
            for operations in paths.values():
                for operation in operations.values():
                    operation["summary"] = summary
                    if description:
                        operation["description"] = description
                    else:
                        operation.pop("description", None)
        return paths, components

    def schema(self) -> dict[str, Any]:
        schema = super().schema()
        schema["info"]["description"] = OVERVIEW
        schema["components"]["schemas"]["ErrorBody"] = TypeAdapter(ErrorBody).json_schema(
            ref_template="#/components/schemas/{model}", by_alias=True
        )
        for definitions in (
            TypeAdapter(ErrorBody)
            .json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
            .get("$defs", {})
            .items()
        ):
            schema["components"]["schemas"][definitions[0]] = definitions[1]
        schema["components"]["schemas"]["ErrorBody"].pop("$defs", None)
        error_schema = {"$ref": "#/components/schemas/ErrorBody"}
        schema["tags"] = [{"name": n, "description": d} for n, d in TAGS.items()]
        schemes = schema["components"].setdefault("securitySchemes", {})
        schemes.setdefault("bearer", {"type": "http", "scheme": "bearer"})["description"] = BEARER
        # The help center's HTML pages (api/helpcenter) are not part of the API.
        schema["paths"] = {
            p: o for p, o in schema["paths"].items() if p != "/hc" and not p.startswith("/hc/")
        }
        marked = conditional_operations(self._app)
        for path, operations in schema["paths"].items():
            for operation in operations.values():
                operation.setdefault("tags", [tag_of(path)])
            _file_bodies(path, operations)
            document_export(path, operations)
            document_conditional(path, operations, marked)  # issue 30
            for method, operation in operations.items():
                _request_example(method, path, operation, schema["components"]["schemas"])
            if not path.startswith(("/api/v1", "/billing")):
                continue
            for method, operation in operations.items():
                responses = operation["responses"] = {
                    str(status): response
                    for status, response in operation.get("responses", {}).items()
                }
                if method == "delete" and not any(s.startswith("2") for s in responses):
                    responses["204"] = {"description": "Deleted; no content"}
                for status, description in ERROR_STATUSES.items():
                    responses.setdefault(status, {"description": description})
                for status, response in responses.items():
                    if status[0] in "45":  # every error has the contract's body
                        example = ERROR_EXAMPLES.get(status) or error_example(status)
                        content = {"schema": error_schema, "example": example}
                        response["content"] = {"application/json": content}
        return schema


def _request_example(
    method: str, path: str, operation: dict[str, Any], schemas: dict[str, Any]
) -> None:
    """The example of the operation's request body, in each of its media types: the body
    model's own (``json_schema_extra={"examples": [...]}``), else ``REQUEST_EXAMPLES``'."""
    for media in operation.get("requestBody", {}).get("content", {}).values():
        schema = media.get("schema", {})
        ref = schema.get("$ref", "")
        if ref.startswith("#/components/schemas/"):
            schema = schemas.get(ref.rsplit("/", 1)[-1], {})
        examples = schema.get("examples") or [REQUEST_EXAMPLES.get((method, path))]
        if examples[0] is not None:
            media.setdefault("example", examples[0])


XLIFF = {"application/xliff+xml": {"schema": {"type": "string", "format": "binary"}}}
ZIP = {"application/zip": {"schema": {"type": "string", "format": "binary"}}}


def _file_bodies(path: str, operations: dict[str, Any]) -> None:
    """The files that travel as themselves, not JSON: translations as XLIFF documents, an
    export's bundle as a zip."""
    if "/exports/" in path and path.endswith("/download") and "get" in operations:
        operations["get"].setdefault("responses", {})["200"] = {
            "description": "The export's bundle: a zip of NDJSON files with their JSON Schema, "
            "streamed (`Content-Disposition: attachment`)",
            "headers": {
                "Content-Disposition": {
                    "schema": {"type": "string"},
                    "description": 'attachment; filename="{org}-{exportId}.zip"',
                }
            },
            "content": ZIP,
        }
    if path.endswith("/translations/export") and "get" in operations:
        operations["get"].setdefault("responses", {})["200"] = {
            "description": "An XLIFF 1.2 document",
            "content": XLIFF,
        }
    if path.endswith("/translations/import") and "post" in operations:
        operations["post"]["requestBody"] = {"required": True, "content": XLIFF}
