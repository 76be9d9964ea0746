"""Webhook secrets (made, encrypted at rest) and the signed body and headers of a delivery.

SPEC "Delivery": ``X-Service-Webhook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
"<t>.<raw body>">`` and the legacy ``X-Service-Signature: sha256=<hex HMAC-SHA256 of the raw
body>``. The HMAC key is the whole secret string (``whsec_…``) as UTF-8, as Stripe's libraries
use it (CONTRACT section 8). Every attempt is signed afresh: new ``t``, new body ``timestamp``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from datetime import datetime
from functools import lru_cache
from typing import Any

import orjson
from cryptography.fernet import Fernet, MultiFernet

from tenancy.clock import iso
from tenancy.settings import get_settings

SECRET_PREFIX = "whsec_"  # noqa: S105  (a prefix, not a secret)
SIGNATURE_HEADER = "X-Service-Webhook-Signature"
LEGACY_SIGNATURE_HEADER = "X-Service-Signature"
EVENT_HEADER = "X-Service-Event"
DELIVERY_ID_HEADER = "X-Service-Delivery-Id"


def new_secret() -> str:
    """``whsec_`` and 32 random bytes in URL-safe base64 (padded, like a Fernet key, so any
    base64url decoder reads it back)."""
    return SECRET_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


@lru_cache(maxsize=4)
def _cipher(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key.encode()) for key in keys])


def _keys() -> MultiFernet:
    """``FAQ_SECRET_KEY`` may list several keys, newest first: the newest encrypts, every one
    decrypts (so the key can be rotated without downtime)."""
    return _cipher(tuple(get_settings().secret_keys()))


def encrypt_secret(secret: str) -> str:
    return _keys().encrypt(secret.encode()).decode()


def decrypt_secret(ciphertext: str) -> str:
    return _keys().decrypt(ciphertext.encode()).decode()


def reencrypt_secret(ciphertext: str) -> str:
    """The same secret encrypted under the newest key (``faq secret-key rotate``)."""
    return _keys().rotate(ciphertext.encode()).decode()


def delivery_body(delivery_id: str, event: str, data: Any, signed_at: datetime) -> dict[str, Any]:
    """The JSON body of a delivery (SPEC "Delivery")."""
    return {"id": delivery_id, "event": event, "data": data, "timestamp": iso(signed_at)}


def _hmac_hex(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signed_request(
    secret: str, delivery_id: str, event: str, data: Any, signed_at: datetime
) -> tuple[bytes, dict[str, str], dict[str, Any]]:
    """The raw body, the headers and the body object of one attempt, signed at ``signed_at``."""
    if not secret.startswith(SECRET_PREFIX) or len(secret) <= len(SECRET_PREFIX):
        raise ValueError("refusing to sign with an empty or malformed secret")
    body = delivery_body(delivery_id, event, data, signed_at)
    raw = orjson.dumps(body)
    t = int(signed_at.timestamp())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "FAQ-Service-Webhooks/1.0",
        SIGNATURE_HEADER: f"t={t},v1={_hmac_hex(secret, f'{t}.'.encode() + raw)}",
        LEGACY_SIGNATURE_HEADER: f"sha256={_hmac_hex(secret, raw)}",
        EVENT_HEADER: event,
        DELIVERY_ID_HEADER: delivery_id,
    }
    return raw, headers, body
