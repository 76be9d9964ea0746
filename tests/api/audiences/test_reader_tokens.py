"""Reader tokens (issue 39): ``/settings/readers`` holds how the org's application signs its
readers' tokens; a publishable key's request with ``X-Reader-Token`` is accepted only with a
token that verifies, each refusal a 401 ``invalid_reader_token`` that says why. Tokens here are
signed by PyJWT with keys made by ``cryptography``: a real JOSE library, not hand-made bytes
(but for ``alg: none``, which no library signs)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.api.audit.test_audit_admin import entries_of, raw_entries
from tests.api.keys.helpers import SITE, as_key, make_public_key
from tests.fixtures.orgs import OrgClient

REPO = Path(__file__).resolve().parents[3]
ISSUER = "https://app.example.com"
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def pem(private: Any) -> str:
    return (
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def claims(org: OrgClient, **over: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {
        "sub": "user-42",
        "email": "ann@example.com",
        "name": "Ann",
        "audiences": ["partners"],
        "iat": now,
        "exp": now + 600,
        "aud": org.slug,
        "iss": ISSUER,
    }
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


async def put_readers(org: OrgClient, **body: Any) -> Any:
    return await org.client.put(
        f"/api/v1/{org.slug}/settings/readers",
        json=body,
        headers={"Authorization": f"Bearer {org.keys['admin']}"},
    )


async def configured(org: OrgClient) -> str:
    """An HS256 key ``app`` and an RS256 key ``rsa``; returns the HS256 secret."""
    r = await put_readers(
        org,
        issuer=ISSUER,
        maxLifetimeSeconds=3600,
        keys=[
            {"kid": "app", "alg": "HS256"},
            {"kid": "rsa", "alg": "RS256", "publicKey": pem(RSA_KEY)},
        ],
    )
    assert r.status_code == 200, await r.get_data()
    keys = (await r.get_json())["data"]["keys"]
    secret = keys[0]["secret"]
    assert secret.startswith("rdsec_") and keys[1]["secret"] is None
    return str(secret)


async def read(org: OrgClient, public_key: str, token: str | None) -> Any:
    headers = {"Origin": SITE} | ({"X-Reader-Token": token} if token is not None else {})
    return await as_key(org, public_key, "GET", "/questions", headers=headers)


async def refused(r: Any) -> str:
    assert r.status_code == 401, await r.get_data()
    body = await r.get_json()
    assert body["error"]["code"] == "invalid_reader_token"
    return str(body["error"]["message"])


async def test_the_setting_shows_no_secret_and_a_put_keeps_a_named_hs256_key(
    org: OrgClient, engine: AsyncEngine
) -> None:
    r = await org.get("/settings/readers")
    assert (await r.get_json())["data"] == {
        "issuer": None,
        "maxLifetimeSeconds": 3600,
        "keys": [],
        "openIdConnect": None,
    }
    secret = await configured(org)
    shown = (await (await org.get("/settings/readers")).get_json())["data"]
    assert shown["issuer"] == ISSUER and shown["maxLifetimeSeconds"] == 3600
    assert [(k["kid"], k["alg"], k["jwk"] is None) for k in shown["keys"]] == [
        ("app", "HS256", True),
        ("rsa", "RS256", False),
    ]
    assert shown["keys"][1]["jwk"]["kty"] == "RSA" and "d" not in shown["keys"][1]["jwk"]
    assert secret not in json.dumps(shown)
    # The same kid again keeps its secret (none shown); the RS256 key left out is gone.
    r = await put_readers(org, issuer=ISSUER, keys=[{"kid": "app", "alg": "HS256"}])
    again = (await r.get_json())["data"]
    assert [(k["kid"], k["secret"]) for k in again["keys"]] == [("app", None)]
    website = (await make_public_key(org))["key"]
    token = jwt.encode(claims(org), secret, algorithm="HS256", headers={"kid": "app"})
    assert (await read(org, website, token)).status_code == 200
    # Audited as a settings change, never with the secret.
    entries = await entries_of(engine, org, resource="settings")
    assert any("readers" in (e["after"] or {}) for e in entries)
    assert secret not in await raw_entries(engine, org.info)


async def test_only_admin_keys_see_or_change_it(org: OrgClient) -> None:
    for scope in ("read", "write"):
        r = await org.get("/settings/readers", scope=scope)
        assert r.status_code == 403
        r = await org.client.put(
            f"/api/v1/{org.slug}/settings/readers",
            json={"keys": []},
            headers={"Authorization": f"Bearer {org.keys[scope]}"},
        )
        assert r.status_code == 403


@pytest.mark.parametrize(
    "keys",
    [
        [{"kid": "a", "alg": "HS256"}, {"kid": "a", "alg": "HS256"}],  # two keys, one kid
        [{"kid": "a", "alg": "HS256", "publicKey": pem(RSA_KEY)}],  # a secret is made here
        [{"kid": "a", "alg": "RS256"}],  # no key
        [{"kid": "a", "alg": "ES256", "publicKey": pem(RSA_KEY)}],  # not an EC key
        [{"kid": "a", "alg": "RS256", "publicKey": "-----BEGIN PUBLIC KEY-----\nxx"}],
        [{"kid": "a", "alg": "RS256", "jwk": RSAAlgorithm.to_jwk(RSA_KEY, as_dict=True)}],
        [{"kid": "a", "alg": "none"}],
        [{"kid": "a b", "alg": "HS256"}],
        [
            {
                "kid": "small",
                "alg": "RS256",
                "publicKey": pem(rsa.generate_private_key(public_exponent=65537, key_size=1024)),
            }
        ],
    ],
)
async def test_a_bad_key_is_refused_and_changes_nothing(
    org: OrgClient, keys: list[dict[str, Any]]
) -> None:
    r = await put_readers(org, keys=keys)
    assert r.status_code == 400, await r.get_data()
    assert (await r.get_json())["error"]["code"] == "validation_failed"
    assert (await (await org.get("/settings/readers")).get_json())["data"]["keys"] == []


async def test_signed_tokens_of_each_kind_are_accepted(org: OrgClient) -> None:
    secret = await configured(org)
    website = (await make_public_key(org))["key"]
    ec_jwk = ECAlgorithm.to_jwk(EC_KEY.public_key(), as_dict=True)
    jwks = {"keys": [{**ec_jwk, "kid": "ec", "alg": "ES256", "use": "sig"}]}
    r = await put_readers(
        org,
        issuer=ISSUER,
        keys=[
            {"kid": "app", "alg": "HS256"},
            {"kid": "rsa", "alg": "RS256", "publicKey": pem(RSA_KEY)},
        ],
        jwks=jwks,
    )
    assert r.status_code == 200, await r.get_data()
    for key, alg, kid in (
        (secret, "HS256", "app"),
        (RSA_KEY, "RS256", "rsa"),
        (EC_KEY, "ES256", "ec"),
    ):
        token = jwt.encode(claims(org), key, algorithm=alg, headers={"kid": kid})
        r = await read(org, website, token)
        assert r.status_code == 200, (alg, await r.get_data())
    # ``aud`` may name the org by its id too, as a list.
    token = jwt.encode(
        claims(org, aud=["elsewhere", org.info.id]),
        secret,
        algorithm="HS256",
        headers={"kid": "app"},
    )
    assert (await read(org, website, token)).status_code == 200


def part(value: dict[str, Any] | bytes) -> str:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unsigned(payload: dict[str, Any]) -> str:
    """``alg: none``: no library makes one (PyJWT refuses to)."""
    return f"{part({'alg': 'none', 'typ': 'JWT', 'kid': 'app'})}.{part(payload)}."


def confused(payload: dict[str, Any], kid: str, public_pem: str) -> str:
    """The key-confusion attack: HS256 keyed with an RS256 key's public PEM, which anyone has
    (PyJWT refuses to sign it; the stdlib's HMAC does)."""
    signing_input = f"{part({'alg': 'HS256', 'typ': 'JWT', 'kid': kid})}.{part(payload)}"
    mac = hmac.new(public_pem.encode(), signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{part(mac)}"


async def test_each_bad_token_is_a_401_that_says_why(org: OrgClient, other_org: OrgClient) -> None:
    website = (await make_public_key(org))["key"]
    token = jwt.encode(claims(org), "x" * 40, algorithm="HS256", headers={"kid": "app"})
    assert "accepts no reader tokens" in await refused(await read(org, website, token))
    secret = await configured(org)
    now = int(time.time())

    def hs(kid: str = "app", key: Any = secret, **over: Any) -> str:
        return jwt.encode(claims(org, **over), key, algorithm="HS256", headers={"kid": kid})

    other_secret = await configured(other_org)
    cases = {
        "not a JWT": "not-a-token",
        "algorithm 'none'": unsigned(claims(org)),
        "unknown": hs(kid="nope"),
        "signs with RS256": confused(claims(org), "rsa", pem(RSA_KEY)),
        "expired": hs(iat=now - 700, exp=now - 100),
        "not valid yet": hs(iat=now + 300, exp=now + 600),
        "another organization": hs(aud=other_org.slug),
        "does not verify": hs(key="a-forged-secret-of-enough-length-0123456789"),
        "lives longer": hs(exp=now + 7200),
        "issuer": hs(iss="https://evil.example"),
        "'sub' is missing": hs(sub=None),
        "audiences must be": hs(audiences="partners"),
        "'exp' is missing": hs(exp=None),
    }
    for reason, bad in cases.items():
        message = await refused(await read(org, website, bad))
        assert reason in message, (reason, message)
    # A token the other org's application signed for the other org is refused here.
    theirs = jwt.encode(claims(other_org), other_secret, algorithm="HS256", headers={"kid": "app"})
    assert "does not verify" in await refused(await read(org, website, theirs))
    # Orgs that trust one key pair: the token names the org it was made for.
    rs = jwt.encode(claims(other_org), RSA_KEY, algorithm="RS256", headers={"kid": "rsa"})
    assert "another organization" in await refused(await read(org, website, rs))
    # Without a reader token, and with a secret key (which sees everything), nothing changes.
    assert (await read(org, website, None)).status_code == 200
    r = await as_key(org, org.keys["read"], "GET", "/questions", headers={"X-Reader-Token": "x"})
    assert r.status_code == 200


async def test_the_documented_python_token_is_accepted(org: OrgClient) -> None:
    """docs/audiences.md's Python example, run as written."""
    text = (REPO / "docs" / "audiences.md").read_text()
    (code,) = re.findall(r"In Python \(PyJWT\).*?```python\n(.*?)```", text, re.S)
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/audiences.md", "exec"), namespace)
    secret = await configured(org)
    website = (await make_public_key(org))["key"]
    token = namespace["reader_token"](secret, org.slug, "user-7", ["partners"])
    assert (await read(org, website, token)).status_code == 200
    assert "another organization" in await refused(
        await read(org, website, namespace["reader_token"](secret, "acme", "user-7", []))
    )
