"""``/openapi.json`` teaches (issue 32): it passes an OpenAPI 3.1 validator, opens with an
overview, every summary is one whole sentence of its view's docstring and every description
Markdown, every error response has the contract's error body, every request body an example
that its schema accepts; ``GET /`` leads to ``/docs``."""

from __future__ import annotations

import inspect
import re
from typing import Any

from jsonschema import Draft202012Validator
from openapi_spec_validator import OpenAPIV31SpecValidator

METHODS = {"get", "put", "post", "patch", "delete"}


async def _spec(client: Any) -> dict[str, Any]:
    r = await client.get("/openapi.json")
    assert r.status_code == 200
    spec: dict[str, Any] = await r.get_json()
    return spec


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """The API's operations (other tests may add routes of their own to the session's app)."""
    return [
        (method, path, operation)
        for path, operations in spec["paths"].items()
        for method, operation in operations.items()
        if method in METHODS and path.startswith(("/api/v1", "/billing"))
    ]


def _docstrings(app: Any) -> dict[tuple[str, str], str]:
    """Each documented operation's view docstring, by (method, OpenAPI path)."""
    found = {}
    for rule in app.url_map.iter_rules():
        doc = inspect.getdoc(app.view_functions[rule.endpoint])
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
        for method in rule.methods or ():
            if doc:
                found[(method.lower(), path)] = doc
    return found


def _words(text: str) -> str:
    return " ".join(text.replace("`", "").split())


async def test_the_document_is_valid_openapi_31_with_an_example_of_every_body(
    client: Any,
) -> None:
    spec = await _spec(client)
    assert spec["openapi"].startswith("3.1")
    errors = [e.message for e in OpenAPIV31SpecValidator(spec).iter_errors()]
    assert errors == []

    bodies = 0
    for method, path, operation in _operations(spec):
        for media_type, media in operation.get("requestBody", {}).get("content", {}).items():
            bodies += 1
            assert "example" in media, (method, path, media_type)
            if media_type == "application/json":
                # The example is one the route would take: valid against its schema.
                schema = {**media["schema"], "components": spec["components"]}
                problems = [
                    e.message for e in Draft202012Validator(schema).iter_errors(media["example"])
                ]
                assert problems == [], (method, path, problems)
    assert bodies >= 15


async def test_every_error_response_has_the_contracts_error_body(client: Any) -> None:
    spec = await _spec(client)
    schema = spec["components"]["schemas"]["ErrorBody"]
    info = spec["components"]["schemas"][schema["properties"]["error"]["$ref"].split("/")[-1]]
    assert set(info["required"]) >= {"code", "message", "details"}
    validator = Draft202012Validator(
        {"$ref": "#/components/schemas/ErrorBody", "components": spec["components"]}
    )
    api_operations = 0
    for method, path, operation in _operations(spec):
        api_operations += 1
        errors = {s: r for s, r in operation["responses"].items() if s[0] in "45"}
        assert {"400", "401", "404", "429", "500", "503"} <= set(errors), (method, path)
        for status, response in errors.items():
            media = response["content"]["application/json"]
            assert media["schema"] == {"$ref": "#/components/schemas/ErrorBody"}, (path, status)
            assert list(validator.iter_errors(media["example"])) == [], (path, status)
            assert media["example"]["error"]["code"], (path, status)
    assert api_operations >= 40


async def test_summaries_are_one_whole_sentence_and_descriptions_markdown(
    client: Any, app: Any
) -> None:
    spec = await _spec(client)
    docstrings = _docstrings(app)
    checked = 0
    for method, path, operation in _operations(spec):
        summary = operation["summary"]
        assert "`" not in summary, (path, summary)  # plain text, no raw ``code``
        assert summary[0].isupper(), (path, summary)
        assert re.search(r"[.!?][)\"']*$", summary), (path, summary)  # never cut mid-sentence
        # One sentence: no sentence end before its last character.
        assert not re.search(r"[a-z)][.!?] [A-Z]", summary[:-1]), (path, summary)
        assert len(summary) <= 160, (path, summary)
        description = operation.get("description", "")
        assert "``" not in description, (path, description)
        doc = docstrings.get((method, path))
        if doc is None:
            continue
        checked += 1
        # Summary then description say the whole docstring, in order, nothing cut.
        assert _words(f"{summary} {description}") == _words(doc), (path, summary, description)
    assert checked >= 40

    listing = spec["paths"]["/api/v1/{org}/categories/{ref}"]["get"]
    assert listing["summary"] == (
        "Get a category by id or slug, served in ?locale= (else Accept-Language)."
    )
    assert listing["description"].startswith("Also readable with a publishable key")
    questions = spec["paths"]["/api/v1/{org}/questions"]["get"]["description"]
    assert "`translation` with `locale`" in questions  # Markdown code, not ``code``


async def test_an_overview_opens_the_document(client: Any) -> None:
    overview = (await _spec(client))["info"]["description"]
    for heading in (
        "## Authentication",
        "## Errors",
        "## Pagination",
        "## Rate limits",
        "## Idempotency",
        "## Webhook signatures",
    ):
        assert heading in overview, heading
    for fact in (
        "Authorization: Bearer <key>",
        "`faq_…`",
        "`faq_pk_…`",
        '{"error": {"code":',
        "meta.pagination.cursor",
        "RateLimit-Remaining",
        "Retry-After",
        "X-Idempotency-Key",
        "idempotency_key_reused",
        "X-Service-Webhook-Signature",
        "X-Service-Signature",
        "/hc/{org}/",
    ):
        assert fact in overview, fact


async def test_the_root_leads_to_the_docs(client: Any) -> None:
    r = await client.get("/")
    assert r.status_code == 302
    assert r.headers["Location"] == "/docs"
    assert '</docs>; rel="service-doc"' in r.headers["Link"]
    assert '</openapi.json>; rel="service-desc"' in r.headers["Link"]
    assert (await client.get(r.headers["Location"])).status_code == 200
    r = await client.post("/")
    assert r.status_code == 405
    assert (await r.get_json())["error"]["code"] == "method_not_allowed"


async def test_every_operation_documents_its_success(client: Any) -> None:
    """Issue 42: a fuzzer found ``GET /exports/{id}/download`` answering a 200 the document
    did not have. Every operation names a 2xx; a file comes as its own media type."""
    spec = await _spec(client)
    missing = [
        f"{method.upper()} {path}"
        for method, path, operation in _operations(spec)
        if not any(str(status).startswith("2") for status in operation.get("responses", {}))
    ]
    assert missing == []
    download = next(op for m, p, op in _operations(spec) if m == "get" and p.endswith("/download"))
    content = download["responses"]["200"]["content"]
    assert content["application/zip"]["schema"] == {"type": "string", "format": "binary"}
