"""``/settings/readers`` (issue 39): how the org's own application signs its readers' tokens
(``api.audiences.tokens`` verifies them). Kept in ``shared.organizations.readers`` so every
API process holds it with the org (``tenancy.directory``), dropped on the change's NOTIFY.

Stored: ``{"issuer", "maxLifetimeSeconds", "keys": [{"kid", "alg", "createdAt", "secret"
(HS256: encrypted with FAQ_SECRET_KEY) | "jwk" (RS256/ES256: the public key only)}]}``. A PUT
replaces the whole setting: an HS256 key it names that was there keeps its secret; a new one
gets a secret made here and shown in that PUT's response only. Public keys come as PEM
(``publicKey``), as a JWK (``jwk``) or in a JWKS document (``jwks``); private keys are refused.

``"openIdConnect"``: the help center's sign-in with the org's identity provider
(``api.helpcenter.oidc``): ``{"issuer", "clientId", "clientSecret" (encrypted with
FAQ_SECRET_KEY; absent for a public client, which signs in with PKCE alone), "audiencesClaim",
"scopes", "displayName"}``. The issuer is an https URL checked like a webhook's
(``api.webhooks.url_safety``). The secret is write-only: a PUT that leaves it out keeps the
stored one while the issuer and client id stay the same.
"""

from __future__ import annotations

import base64
import re
import secrets
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from api.audiences.schemas import OpenIdConnectIn, ReaderKeyIn, ReadersUpdate
from api.audiences.tokens import ES256, HS256, RS256
from api.errors import ValidationFailed, field_error
from api.webhooks.signing import encrypt_secret, reencrypt_secret
from api.webhooks.url_safety import UnsafeUrl, check_url
from tenancy.audit import audit_settings
from tenancy.clock import iso, utcnow
from tenancy.db import shared_session
from tenancy.keys import notify_tenancy_changed
from tenancy.models import Organization
from tenancy.principal import Principal
from tenancy.settings import get_settings
from tenancy.transactions import commit

SECRET_PREFIX = "rdsec_"  # noqa: S105  (a prefix, not a secret)
DEFAULT_LIFETIME = 3600
PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "k", "oth"})
MIN_RSA_BITS = 2048
OIDC = "openIdConnect"
_SCOPE_TOKEN = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")  # RFC 6749 section 3.3


def _oidc_public(stored: dict[str, Any] | None) -> dict[str, Any] | None:
    if not stored:
        return None
    return {
        "issuer": stored["issuer"],
        "clientId": stored["clientId"],
        "clientSecretSet": "clientSecret" in stored,
        "audiencesClaim": stored.get("audiencesClaim"),
        "scopes": stored["scopes"],
        "displayName": stored.get("displayName"),
    }


def public(stored: dict[str, Any]) -> dict[str, Any]:
    """The setting as ``GET`` shows it: never a secret."""
    return {
        "issuer": stored.get("issuer"),
        "maxLifetimeSeconds": stored.get("maxLifetimeSeconds", DEFAULT_LIFETIME),
        "keys": [
            {
                "kid": k["kid"],
                "alg": k["alg"],
                "jwk": k.get("jwk"),
                "createdAt": k["createdAt"],
            }
            for k in stored.get("keys", [])
        ],
        OIDC: _oidc_public(stored.get(OIDC)),
    }


def _invalid(field: str, issue: str) -> ValidationFailed:
    return ValidationFailed(details=field_error(field, issue))


def _checked_key(alg: str, key: Any, field: str) -> dict[str, Any]:
    """``key`` (a public key object) as a public JWK, when it fits ``alg``."""
    if alg == RS256:
        if not isinstance(key, rsa.RSAPublicKey) or key.key_size < MIN_RSA_BITS:
            raise _invalid(field, f"RS256 needs an RSA public key of {MIN_RSA_BITS} bits or more")
        return dict(RSAAlgorithm.to_jwk(key, as_dict=True))
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != "secp256r1":
        raise _invalid(field, "ES256 needs an EC public key on P-256")
    return dict(ECAlgorithm.to_jwk(key, as_dict=True))


def _from_jwk(alg: str, jwk: dict[str, Any], field: str) -> dict[str, Any]:
    if PRIVATE_MEMBERS & set(jwk):
        raise _invalid(field, "a private key: send the public key only")
    try:
        key = jwt.PyJWK(jwk, algorithm=alg).key
    except (jwt.PyJWTError, ValueError, TypeError, KeyError) as error:
        raise _invalid(field, f"not a {alg} public key ({type(error).__name__})") from None
    return _checked_key(alg, key, field)


def _from_pem(alg: str, pem: str, field: str) -> dict[str, Any]:
    try:
        key = serialization.load_pem_public_key(pem.encode())
    except (ValueError, TypeError):
        raise _invalid(field, "not a PEM public key") from None
    return _checked_key(alg, key, field)


def _new_key(
    body: ReaderKeyIn, field: str, kept: dict[str, dict[str, Any]], now: str
) -> tuple[dict[str, Any], str | None]:
    """The stored key and, for a new HS256 key, its secret (shown once)."""
    if body.alg == HS256:
        if body.public_key is not None or body.jwk is not None:
            raise _invalid(field, "an HS256 key's secret is made by the service: send kid and alg")
        old = kept.get(body.kid)
        if old is not None and old["alg"] == HS256:
            return old, None
        secret = SECRET_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
        stored = {"kid": body.kid, "alg": HS256, "createdAt": now}
        return {**stored, "secret": encrypt_secret(secret)}, secret
    if (body.public_key is None) == (body.jwk is None):
        raise _invalid(field, f"{body.alg} needs exactly one of publicKey (PEM) and jwk")
    if body.public_key is not None:
        jwk = _from_pem(body.alg, body.public_key, f"{field}.publicKey")
    else:
        jwk = _from_jwk(body.alg, dict(body.jwk or {}), f"{field}.jwk")
    old = kept.get(body.kid)
    created = old["createdAt"] if old is not None and old.get("jwk") == jwk else now
    return {"kid": body.kid, "alg": body.alg, "jwk": jwk, "createdAt": created}, None


def _jwks_keys(jwks: dict[str, Any]) -> list[ReaderKeyIn]:
    """The keys of a JWKS document (each with its ``kid`` and ``alg``: RS256 or ES256)."""
    listed = jwks.get("keys")
    if not isinstance(listed, list) or not listed:
        raise _invalid("jwks", 'a JWKS document: {"keys": [...]} with at least one key')
    out = []
    for n, jwk in enumerate(listed):
        if not isinstance(jwk, dict) or not isinstance(jwk.get("kid"), str):
            raise _invalid(f"jwks.keys[{n}]", "a JWK with a kid")
        if jwk.get("alg") not in (RS256, ES256):
            raise _invalid(f"jwks.keys[{n}].alg", "RS256 or ES256")
        try:
            out.append(ReaderKeyIn(kid=jwk["kid"], alg=jwk["alg"], jwk=jwk))
        except ValueError:
            raise _invalid(f"jwks.keys[{n}].kid", "1 to 100 of A-Z a-z 0-9 . _ -") from None
    return out


async def _open_id_connect(body: OpenIdConnectIn, before: dict[str, Any] | None) -> dict[str, Any]:
    """The stored ``openIdConnect``: checked, its secret encrypted (or kept, see the module)."""
    field = f"{OIDC}.issuer"
    issuer = body.issuer
    if "?" in issuer or "#" in issuer:
        raise _invalid(field, "an issuer URL has no query or fragment")
    try:
        await check_url(issuer, allow_private=get_settings().faq_webhook_allow_private_networks)
    except UnsafeUrl as error:
        raise _invalid(field, str(error)) from None
    scopes = body.scopes.split()
    if "openid" not in scopes or not all(_SCOPE_TOKEN.match(s) for s in scopes):
        raise _invalid(f"{OIDC}.scopes", 'space-separated scopes, "openid" among them')
    stored: dict[str, Any] = {
        "issuer": issuer,
        "clientId": body.client_id,
        "scopes": " ".join(dict.fromkeys(scopes)),
    }
    old = before or {}
    if body.client_secret is not None:
        stored["clientSecret"] = encrypt_secret(body.client_secret)
    elif "clientSecret" in old and (old["issuer"], old["clientId"]) == (issuer, body.client_id):
        stored["clientSecret"] = old["clientSecret"]
    if body.audiences_claim is not None:
        stored["audiencesClaim"] = body.audiences_claim
    if body.display_name is not None:
        stored["displayName"] = body.display_name
    return stored


async def _stored(session: AsyncSession, org: Principal, *, lock: bool) -> dict[str, Any]:
    stmt = select(Organization.readers).where(Organization.id == org.id)
    if lock:
        # As every settings write: FOR NO KEY UPDATE, never FOR UPDATE (api/settings/service.py).
        stmt = stmt.with_for_update(key_share=True)
    return dict((await session.execute(stmt)).scalar_one() or {})


async def get_readers(session: AsyncSession, org: Principal) -> dict[str, Any]:
    org.require("admin")
    return public(await _stored(session, org, lock=False))


async def put_readers(session: AsyncSession, org: Principal, body: ReadersUpdate) -> dict[str, Any]:
    """Replace the setting; the response shows each new HS256 secret once (``secret``)."""
    org.require("admin")
    before_stored = await _stored(session, org, lock=True)
    kept = {k["kid"]: k for k in before_stored.get("keys", [])}
    requested = list(body.keys) + (_jwks_keys(body.jwks) if body.jwks is not None else [])
    seen: set[str] = set()
    now = str(iso(utcnow()))
    keys, shown = [], {}
    for n, key in enumerate(requested):
        field = f"keys[{n}]" if n < len(body.keys) else f"jwks.keys[{n - len(body.keys)}]"
        if key.kid in seen:
            raise _invalid(f"{field}.kid", "two keys have this kid")
        seen.add(key.kid)
        stored, secret = _new_key(key, field, kept, now)
        keys.append(stored)
        if secret is not None:
            shown[key.kid] = secret
    after_stored: dict[str, Any] = {
        "issuer": body.issuer,
        "maxLifetimeSeconds": body.max_lifetime_seconds,
        "keys": keys,
    }
    if body.open_id_connect is not None:
        after_stored[OIDC] = await _open_id_connect(body.open_id_connect, before_stored.get(OIDC))
    before, after = public(before_stored), public(after_stored)
    out = {**after, "keys": [{**k, "secret": shown.get(k["kid"])} for k in after["keys"]]}
    if after_stored == before_stored:
        return out
    await session.execute(
        update(Organization).where(Organization.id == org.id).values(readers=after_stored)
    )
    if before != after:
        await audit_settings(session, org.id, org.actor, {"readers": before}, {"readers": after})
    await notify_tenancy_changed(session, org.id)
    return out


async def reencrypt_reader_secrets(engine: AsyncEngine) -> int:
    """Re-encrypt every org's HS256 reader secrets and OpenID Connect client secret under the
    newest ``FAQ_SECRET_KEY`` (what ``faq secret-key rotate`` runs beside the webhook
    secrets); returns how many. One
    transaction per org that has any, its row locked as every settings write locks it;
    running it again is safe."""
    async with shared_session(engine) as session:
        ids = (
            await session.execute(
                select(Organization.id)
                .where(
                    or_(
                        Organization.readers["keys"].isnot(None),
                        Organization.readers[OIDC].isnot(None),
                    )
                )
                .order_by(Organization.created_at)
            )
        ).scalars()
        orgs = list(ids)
    total = 0
    for org_id in orgs:
        async with shared_session(engine) as session:
            stored = (
                await session.execute(
                    select(Organization.readers)
                    .where(Organization.id == org_id)
                    .with_for_update(key_share=True)
                )
            ).scalar_one()
            keys = [
                {**k, "secret": reencrypt_secret(k["secret"])} if "secret" in k else k
                for k in stored.get("keys", [])
            ]
            rotated = {**stored, "keys": keys}
            oidc = stored.get(OIDC) or {}
            if "clientSecret" in oidc:
                rotated[OIDC] = {**oidc, "clientSecret": reencrypt_secret(oidc["clientSecret"])}
            done = sum(1 for k in keys if "secret" in k) + ("clientSecret" in oidc)
            if done:
                await session.execute(
                    update(Organization).where(Organization.id == org_id).values(readers=rotated)
                )
                await notify_tenancy_changed(session, org_id)
            await commit(session)
        total += done
    return total
