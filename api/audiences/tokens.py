"""Reader tokens (issue 39): JWTs the org's own application signs for its signed-in readers,
verified with PyJWT against the keys of ``PUT /settings/readers`` (``api.audiences.readers``).

A token is accepted when, in this order:

- its header names an accepted algorithm (HS256, RS256, ES256: never ``none``) and a key of
  the org (``kid``; it may be left out while the org has exactly one key), of that algorithm;
- its signature verifies with that key;
- it carries ``sub``, ``iat``, ``exp`` and ``aud`` naming this org (its slug or id: a token
  made for another org is refused even when both orgs trust one key pair), and ``iss`` equal to
  the org's issuer when one is set;
- it is not expired, not issued in the future, not before its ``nbf`` (30 s of clock skew
  allowed) and lives (``exp - iat``) no longer than the org's ``maxLifetimeSeconds``;
- ``audiences``, when present, is a list of at most 200 slugs.

Anything else is 401 ``invalid_reader_token`` with the reason in the message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import jwt

from api.errors import InvalidReaderToken
from api.webhooks.signing import decrypt_secret
from tenancy.principal import Reader

READER_TOKEN_HEADER = "X-Reader-Token"  # noqa: S105  (a header name)
HS256, RS256, ES256 = "HS256", "RS256", "ES256"
ALGORITHMS = (HS256, RS256, ES256)
LEEWAY_SECONDS = 30
MAX_AUDIENCES = 200
MAX_TOKEN_BYTES = 8192
_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@lru_cache(maxsize=512)
def _public_key(alg: str, jwk_json: str) -> Any:
    """The key object of a stored public JWK (parsed once per process and key)."""
    return jwt.PyJWK(json.loads(jwk_json), algorithm=alg).key


@lru_cache(maxsize=512)
def _secret(ciphertext: str) -> bytes:
    """An HS256 secret as the HMAC key: the whole secret string, UTF-8."""
    return decrypt_secret(ciphertext).encode()


def _refuse(reason: str) -> InvalidReaderToken:
    return InvalidReaderToken(f"The reader token is not valid: {reason}.")


def _key_of(config: Mapping[str, Any], header: Mapping[str, Any]) -> tuple[str, Any]:
    """The algorithm and key object the token's header names, else 401."""
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise _refuse(f"the algorithm {alg!r} is not accepted (HS256, RS256 or ES256)")
    keys: list[Mapping[str, Any]] = list(config.get("keys", []))
    kid = header.get("kid")
    if kid is None:
        if len(keys) != 1:
            raise _refuse("the header names no key (kid)")
        key = keys[0]
    else:
        found = [k for k in keys if k.get("kid") == kid]
        if not found:
            raise _refuse(f"the key {str(kid)[:100]!r} is unknown to this organization")
        key = found[0]
    if key["alg"] != alg:
        raise _refuse(f"the key {key['kid']!r} signs with {key['alg']}, not {alg}")
    if alg == HS256:
        return alg, _secret(key["secret"])
    return alg, _public_key(alg, json.dumps(key["jwk"], sort_keys=True))


def claims_reader(claims: Mapping[str, Any]) -> Reader:
    """The reader verified claims name, else 401."""
    sub = claims.get("sub")
    if not isinstance(sub, str) or not 0 < len(sub) <= 255:
        raise _refuse("sub must be a string of 1 to 255 characters")
    audiences = claims.get("audiences", [])
    if (
        not isinstance(audiences, list)
        or len(audiences) > MAX_AUDIENCES
        or not all(isinstance(a, str) and len(a) <= 100 and _SLUG.match(a) for a in audiences)
    ):
        raise _refuse(f"audiences must be a list of at most {MAX_AUDIENCES} audience slugs")
    email, name = claims.get("email"), claims.get("name")
    for field, value, limit in (("email", email, 320), ("name", name, 200)):
        if value is not None and (not isinstance(value, str) or len(value) > limit):
            raise _refuse(f"{field} must be a string of at most {limit} characters")
    return Reader(sub, tuple(dict.fromkeys(audiences)), email, name)


def verify_reader_token(
    token: str, org_id: str, org_slug: str, config: Mapping[str, Any]
) -> Reader:
    """The reader ``token`` signs in, for the org (``config``: its stored ``readers``), or
    401 ``invalid_reader_token``."""
    return claims_reader(verified_claims(token, org_id, org_slug, config))


def verified_claims(
    token: str, org_id: str, org_slug: str, config: Mapping[str, Any]
) -> dict[str, Any]:
    """The claims of ``token`` once every check above but the reader's own passed, else
    401 ``invalid_reader_token``."""
    if not config.get("keys"):
        raise _refuse("this organization accepts no reader tokens (PUT /settings/readers)")
    if len(token) > MAX_TOKEN_BYTES:
        raise _refuse(f"it is longer than {MAX_TOKEN_BYTES} bytes")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise _refuse("it is not a JWT") from None
    alg, key = _key_of(config, header)
    issuer = config.get("issuer")
    required = ["sub", "iat", "exp", "aud"] + (["iss"] if issuer else [])
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=[alg],
            audience=[org_slug, org_id],
            issuer=issuer or None,
            leeway=LEEWAY_SECONDS,
            options={"require": required},
        )
    except jwt.ExpiredSignatureError:
        raise _refuse("it has expired") from None
    except jwt.ImmatureSignatureError:
        raise _refuse("it is not valid yet (iat or nbf in the future)") from None
    except jwt.InvalidAudienceError:
        raise _refuse("it was made for another organization (aud)") from None
    except jwt.InvalidIssuerError:
        raise _refuse("its issuer (iss) is not the one this organization accepts") from None
    except jwt.InvalidSignatureError:
        raise _refuse("its signature does not verify") from None
    except jwt.MissingRequiredClaimError as error:
        raise _refuse(f"the claim {error.claim!r} is missing") from None
    except jwt.PyJWTError as error:
        raise _refuse(f"it cannot be read ({type(error).__name__})") from None
    lifetime = claims["exp"] - claims["iat"]
    limit = int(config.get("maxLifetimeSeconds", 0))
    if not isinstance(lifetime, int | float) or lifetime > limit + LEEWAY_SECONDS:
        raise _refuse(f"it lives longer than the {limit} seconds this organization allows")
    return claims
