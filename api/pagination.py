"""Opaque, tamper-evident keyset cursors and the list envelope.

A cursor is the sort key of the last item of a page, signed with a key derived from
``FAQ_SECRET_KEY`` and bound to the list it came from, so a cursor from another list,
an edited one or an invented one is refused (``validation_failed``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from itsdangerous import BadData, BadSignature, URLSafeSerializer
from itsdangerous.encoding import base64_decode, base64_encode

from api.errors import ApiError, ValidationFailed, field_error


class CursorCodec:
    def __init__(self, *secret_keys: str) -> None:
        """Signs with the first key; accepts cursors signed with any (key rotation)."""
        derived = [hashlib.sha256(b"faq-cursor:" + k.encode()).hexdigest() for k in secret_keys]
        # itsdangerous signs with the last key of the list and verifies with all of them.
        self._secrets = list(reversed(derived))

    def _serializer(self, kind: str) -> URLSafeSerializer:
        return URLSafeSerializer(self._secrets, salt=f"cursor:{kind}")

    def encode(self, kind: str, key: list[Any]) -> str:
        return str(self._serializer(kind).dumps(key))

    def decode(
        self,
        kind: str,
        cursor: str,
        *,
        error: type[ApiError] = ValidationFailed,
    ) -> list[Any]:
        if len(cursor) > 512 or not _canonical(cursor):
            raise error("The cursor is not valid.", details=field_error("cursor", "not valid"))
        try:
            key = self._serializer(kind).loads(cursor)
        except BadSignature:
            raise error(
                "The cursor is not valid.", details=field_error("cursor", "not valid")
            ) from None
        if not isinstance(key, list):
            raise error("The cursor is not valid.", details=field_error("cursor", "not valid"))
        return key


def _canonical(cursor: str) -> bool:
    """Each part is base64 in its one canonical spelling. A decoder ignores the spare low bits
    of the last character, so without this an edited last character could still verify."""
    try:
        return all(base64_encode(base64_decode(p)).decode() == p for p in cursor.split("."))
    except BadData:
        return False


def list_body(items: list[dict[str, Any]], limit: int, cursor: str | None) -> dict[str, Any]:
    return {
        "data": items,
        "meta": {"pagination": {"limit": limit, "cursor": cursor, "hasMore": cursor is not None}},
    }
