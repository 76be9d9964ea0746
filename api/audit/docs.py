"""The OpenAPI description of the export's body: NDJSON, which quart-schema (JSON bodies
only) cannot declare. ``api.http.openapi`` applies it to the document (as it does for XLIFF)."""

from __future__ import annotations

from typing import Any

TAG = ("audit", "The organization's audit log: every change of every resource; NDJSON export")
NDJSON = {
    "application/x-ndjson": {
        # One entry (the shape of GET …/audit) per line; OpenAPI 3.1 has no NDJSON item type.
        "schema": {"type": "string", "description": "One OrgAuditEntryOut (JSON) per line"}
    }
}


def document_export(path: str, operations: dict[str, Any]) -> None:
    """``GET …/audit/export`` answers 200 with NDJSON (an empty body for an empty window)."""
    if path.endswith("/audit/export") and "get" in operations:
        operations["get"].setdefault("responses", {})["200"] = {
            "description": "The entries, oldest first, one JSON object per line",
            "content": NDJSON,
        }
