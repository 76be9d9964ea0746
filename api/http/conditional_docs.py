"""Conditional requests in the OpenAPI document (issue 30, ``api.http.conditional``): the
``ETag`` of every read, ``If-None-Match`` and 304 on reads, ``If-Match`` / ``If-None-Match``
and 412 on the writes marked ``@conditional``."""

from __future__ import annotations

import re
from typing import Any

from quart_schema.openapi import PATH_RE

from api.http.conditional import CONDITIONAL_ATTRIBUTE, WRITES

ETAG_HEADER = {
    "description": "The representation's entity tag: strong for one resource, weak (`W/`) "
    "for a list. Send it back in `If-None-Match` (reads) or `If-Match` (writes).",
    "schema": {"type": "string"},
}
IF_NONE_MATCH_READ = {
    "name": "If-None-Match",
    "in": "header",
    "required": False,
    "description": "Entity tags of representations the client holds: 304 when one is current.",
    "schema": {"type": "string"},
}
IF_MATCH = {
    "name": "If-Match",
    "in": "header",
    "required": False,
    "description": "Write only if the resource's current strong entity tag is one of these "
    "(`*`: if it exists); else 412 `precondition_failed` with the current resource in `data`. "
    "The check and the write are one transaction, the resource's row locked.",
    "schema": {"type": "string"},
}
IF_NONE_MATCH_WRITE = {
    **IF_NONE_MATCH_READ,
    "description": "Write only if the resource's current entity tag is none of these (`*`: "
    "only if it does not exist yet, e.g. a PUT that creates); else 412.",
}
NOT_MODIFIED = {
    "description": "Not modified: the tag in If-None-Match is current; no body",
    "headers": {"ETag": ETAG_HEADER},
}
PRECONDITION_FAILED = (
    "precondition_failed: If-Match (or If-None-Match) does not hold; the body's `data` is the "
    "resource as it is now (null if there is none) and `ETag` its tag"
)


def conditional_operations(app: Any) -> set[tuple[str, str]]:
    """(OpenAPI path, method) of every write marked ``@conditional`` (``app``: the Quart app,
    or the weak proxy quart-schema holds)."""
    marked = set()
    for rule in app.url_map.iter_rules():
        view = app.view_functions.get(rule.endpoint)
        if getattr(view, CONDITIONAL_ATTRIBUTE, None) is None:
            continue
        path = re.sub(PATH_RE, r"{\1}", rule.rule)
        marked |= {(path, method.lower()) for method in (rule.methods or set()) & WRITES}
    return marked


def _with_etag(responses: dict[Any, Any], status: int) -> None:
    """The ``ETag`` header on the response of ``status`` (keyed by int or text)."""
    response = responses.get(status) or responses.get(str(status))
    if response is not None:
        response.setdefault("headers", {})["ETag"] = ETAG_HEADER


def document_conditional(
    path: str, operations: dict[str, Any], marked: set[tuple[str, str]]
) -> None:
    """Headers and responses of conditional requests on the API's operations of ``path``."""
    if not path.startswith("/api/v1"):
        return
    for method, operation in operations.items():
        responses = operation.setdefault("responses", {})
        parameters = operation.setdefault("parameters", [])
        if method == "get":
            parameters.append(IF_NONE_MATCH_READ)
            _with_etag(responses, 200)
            responses["304"] = NOT_MODIFIED
        elif (path, method) in marked:
            parameters += [IF_MATCH, IF_NONE_MATCH_WRITE]
            _with_etag(responses, 200)
            _with_etag(responses, 201)
            responses["412"] = {"description": PRECONDITION_FAILED}
