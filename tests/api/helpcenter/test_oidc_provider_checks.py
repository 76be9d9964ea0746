"""The checks of ``api.helpcenter.oidc_provider`` one by one: PKCE, the audience claim, the
reader, and each ID token refusal, with tokens signed by PyJWT and a JWKS kept as discovery
would keep it (no network). The whole flow against a real provider is test_oidc_sign_in.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from api.helpcenter import oidc_provider
from api.helpcenter.oidc_provider import (
    Provider,
    SignInProblem,
    audience_slugs,
    authorization_url,
    code_challenge,
    reader_of,
    verify_id_token,
)
from tenancy.principal import Reader
from tenancy.settings import get_settings

ISSUER = "https://idp.example.com"
CLIENT = "help-center"
NONCE = "n-0S6_WzA2Mj"
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
OTHER_RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PROVIDER = Provider(
    issuer=ISSUER,
    authorization_endpoint=f"{ISSUER}/authorize?tenant=acme",
    token_endpoint=f"{ISSUER}/token",
    jwks_uri=f"{ISSUER}/jwks",
    secret_in_body=False,
)


@pytest.fixture(autouse=True)
def kept_jwks() -> Any:
    """The provider's JWKS as if fetched a moment ago: an RSA and an EC key."""
    rsa_jwk = RSAAlgorithm.to_jwk(RSA_KEY.public_key(), as_dict=True) | {"kid": "r1"}
    ec_jwk = ECAlgorithm.to_jwk(EC_KEY.public_key(), as_dict=True) | {"kid": "e1"}
    oidc_provider.forget_documents()
    oidc_provider._documents[PROVIDER.jwks_uri] = (time.monotonic(), {"keys": [rsa_jwk, ec_jwk]})
    yield
    oidc_provider.forget_documents()


def id_token(key: Any = RSA_KEY, alg: str = "RS256", kid: str = "r1", **over: Any) -> str:
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": CLIENT,
        "sub": "user-7",
        "iat": now,
        "exp": now + 300,
        "nonce": NONCE,
        "email": "ann@example.com",
        "name": "Ann",
    } | over
    claims = {k: v for k, v in claims.items() if v is not None}
    return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})


async def verified(token: str) -> dict[str, Any]:
    return await verify_id_token(get_settings(), PROVIDER, token, client_id=CLIENT, nonce=NONCE)


def test_the_pkce_challenge_is_rfc_7636s() -> None:
    # RFC 7636, appendix B.
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert code_challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_the_authorization_url_keeps_the_endpoints_own_query() -> None:
    url = authorization_url(
        PROVIDER,
        client_id=CLIENT,
        redirect_uri="https://faq.example.com/hc/acme/access/oidc/callback",
        scopes="openid email",
        state="s",
        nonce="n",
        verifier="v" * 43,
    )
    assert url.startswith(f"{ISSUER}/authorize?tenant=acme&response_type=code&")
    assert "code_challenge_method=S256" in url and "scope=openid+email" in url


@pytest.mark.parametrize(
    ("claim", "slugs"),
    [
        (["partners", "Staff Only", 7, "partners", "eu-team"], ("partners", "eu-team")),
        ("partners  eu-team", ("partners", "eu-team")),
        ({"partners": True}, ()),
        (None, ()),
        (["x" * 101], ()),
    ],
)
def test_only_slug_shaped_values_of_the_claim_count(claim: Any, slugs: tuple[str, ...]) -> None:
    assert audience_slugs(claim) == slugs


def test_the_reader_has_the_claims_and_the_named_audiences() -> None:
    claims = {"sub": "u1", "email": "a@example.com", "preferred_username": "ann", "groups": "a b"}
    assert reader_of(claims, "groups") == Reader("u1", ("a", "b"), "a@example.com", "ann")
    assert reader_of(claims, None).audiences == ()  # no claim named: public content only
    assert reader_of(claims | {"email": 5}, "roles").email is None
    with pytest.raises(SignInProblem):
        reader_of({"sub": ""}, "groups")


async def test_a_good_id_token_of_each_algorithm_verifies() -> None:
    assert (await verified(id_token()))["sub"] == "user-7"
    assert (await verified(id_token(EC_KEY, "ES256", "e1")))["email"] == "ann@example.com"
    assert (await verified(id_token(alg="PS256")))["name"] == "Ann"
    several = id_token(aud=[CLIENT, "another"], azp=CLIENT)
    assert (await verified(several))["azp"] == CLIENT


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda: id_token(exp=int(time.time()) - 3600), "expired"),
        (lambda: id_token(iat=int(time.time()) + 3600), "in the future"),
        (lambda: id_token(aud="another-app"), "another application (aud)"),
        (lambda: id_token(aud=[CLIENT, "another"], azp="another"), "another application (azp)"),
        (lambda: id_token(iss="https://evil.example.com"), "another issuer"),
        (lambda: id_token(nonce="replayed"), "(nonce)"),
        (lambda: id_token(nonce=None), "(nonce)"),
        (lambda: id_token(iat=None), "'iat'"),
        (lambda: id_token(OTHER_RSA_KEY), "does not verify"),
        (lambda: id_token(kid="unknown"), "does not list"),
        (
            lambda: id_token(EC_KEY, "ES256", "r1"),
            "does not list",
        ),  # an RSA kid for an EC signature
        (
            lambda: jwt.encode(
                {"sub": "x"}, "secret-of-32-bytes-at-the-least!!", algorithm="HS256"
            ),
            "HS256",
        ),
        (lambda: "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "'none'"),
        (lambda: "not a token", "not a JWT"),
    ],
)
async def test_each_bad_id_token_is_refused_with_its_reason(
    make: Callable[[], str], reason: str
) -> None:
    """Each token is made when its test runs: its times are relative to now, not to when the
    suite was collected (a long run would otherwise find every one expired)."""
    with pytest.raises(SignInProblem) as refused:
        await verified(make())
    assert refused.value.status == 401
    assert reason in refused.value.message


async def test_a_call_to_a_refused_address_is_a_502_before_any_connection() -> None:
    closed = get_settings().model_copy(update={"faq_webhook_allow_private_networks": False})
    for url in ("https://127.0.0.1:9/x", "https://169.254.169.254/latest", "http://idp.example"):
        with pytest.raises(SignInProblem) as refused:
            await oidc_provider.fetch(closed, url)
        assert refused.value.status == 502 and "not allowed" in refused.value.message
