"""Opaque, tamper-evident keyset cursors and the list envelope.

A cursor is the sort key of the last item of a page, signed with a key derived from
``FAQ_SECRET_KEY`` and bound to the list it came from, so a cursor from another list,
an edited one or an invented one is refused (``validation_failed``).
"""

from __future__ import annotations

import hashlib
from typing import Any, TypeVar

import orjson
from itsdangerous import BadData, BadSignature, URLSafeSerializer
from itsdangerous.encoding import base64_decode, base64_encode
from sqlalchemy import Select, and_, or_
from sqlalchemy.sql.elements import SQLCoreOperations

from api.errors import ServiceError, ValidationFailed, field_error

SERIALIZERS_KEPT = 256


class CursorCodec:
    def __init__(self, *secret_keys: str) -> None:
        """Signs with the first key; accepts cursors signed with any (key rotation)."""
        derived = [hashlib.sha256(b"faq-cursor:" + k.encode()).hexdigest() for k in secret_keys]
        # itsdangerous signs with the last key of the list and verifies with all of them.
        self._secrets = list(reversed(derived))
        self._serializers: dict[str, URLSafeSerializer] = {}

    def _serializer(self, kind: str) -> URLSafeSerializer:
        """One serializer per list kind, kept (a kind with ``q`` holds the query: bounded)."""
        serializer = self._serializers.get(kind)
        if serializer is None:
            serializer = URLSafeSerializer(self._secrets, salt=f"cursor:{kind}")
            if len(self._serializers) < SERIALIZERS_KEPT:
                self._serializers[kind] = serializer
        return serializer

    def encode(self, kind: str, key: list[Any]) -> str:
        return str(self._serializer(kind).dumps(key))

    def decode(
        self,
        kind: str,
        cursor: str,
        *,
        error: type[ServiceError] = ValidationFailed,
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


def list_json(items: list[str], limit: int, cursor: str | None) -> bytes:
    """``list_body`` as the JSON the app sends, from items already in JSON text."""
    meta = orjson.dumps(
        {"pagination": {"limit": limit, "cursor": cursor, "hasMore": cursor is not None}}
    )
    return b'{"data":[' + ",".join(items).encode() + b'],"meta":' + meta + b"}"


AnySelect = TypeVar("AnySelect", bound=Select[*tuple[Any, ...]])


def keyset_page(
    stmt: AnySelect,
    first: SQLCoreOperations[Any],
    id_column: SQLCoreOperations[Any],
    after: list[Any] | None,
    *,
    descending: bool = False,
) -> AnySelect:
    """Keyset pagination: order by ``first`` (descending when asked) then the id, and start
    after ``after``, the key ``[first, id]`` of the previous page's last item."""
    if after is not None:
        beyond = first < after[0] if descending else first > after[0]
        stmt = stmt.where(or_(beyond, and_(first == after[0], id_column > after[1])))
    return stmt.order_by(first.desc() if descending else first, id_column)
