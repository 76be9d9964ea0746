"""Issue 39: signing in to the hosted help center with the org's OpenID Connect provider,
against a real provider process: ``oidc-provider-mock`` (Authlib's authorization server, a
maintained OIDC provider for tests) served over TLS on 127.0.0.1 by a thread of this process,
its certificate from a ``trustme`` CA the app trusts through ``FAQ_WEBHOOK_CA_BUNDLE``. Clients
must register (``require_client_registration``), so a wrong client secret is refused for real.

The browser is the test: it follows the help center's redirect to the provider, signs in there
(the provider's form: a ``sub``), and brings the provider's answer back to the callback, with
the cookies each response set."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import aiohttp
import oidc_provider_mock
import pytest
import trustme
import werkzeug.serving
from quart import Quart
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from api.audiences.readers import reencrypt_reader_secrets
from api.helpcenter.oidc_provider import forget_documents
from api.webhooks.signing import decrypt_secret
from billing.plans import Plan
from tests.api.audiences.test_leak_surfaces import Site, build
from tests.api.audiences.test_reader_tokens import put_readers
from tests.api.helpcenter.helpers import enable
from tests.conftest import OrgFactory
from tests.fixtures.orgs import OrgClient

READER, FLOW = "hc_reader", "hc_oidc"


@dataclass
class Provider:
    issuer: str  # https://127.0.0.1:<port>, as the provider names itself
    ca_path: Path
    tls: ssl.SSLContext  # the browser's trust in it

    async def call(self, method: str, path: str, **kw: Any) -> tuple[int, Any, str | None]:
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                method, f"{self.issuer}{path}", ssl=self.tls, allow_redirects=False, **kw
            ) as r,
        ):
            body = await r.read()
            return r.status, body, r.headers.get("Location")

    async def register(self, org: OrgClient) -> tuple[str, str]:
        """A client of the help center's callback: its id and secret."""
        callback = f"http://localhost/hc/{org.slug}/access/oidc/callback"
        status, body, _ = await self.call(
            "POST", "/oauth2/clients", json={"redirect_uris": [callback]}
        )
        assert status == 201, body
        made = json.loads(body)
        return made["client_id"], made["client_secret"]

    async def user(self, sub: str, **claims: Any) -> None:
        status, body, _ = await self.call("PUT", f"/users/{sub}", json=claims)
        assert status == 204, body

    async def sign_in(self, authorization_url: str, sub: str, *, deny: bool = False) -> str:
        """The reader at the provider's form: where the provider sends the browser back."""
        form = {"sub": sub} | ({"action": "deny"} if deny else {})
        async with (
            aiohttp.ClientSession() as session,
            session.post(authorization_url, data=form, ssl=self.tls, allow_redirects=False) as r,
        ):
            assert r.status == 302, await r.text()
            return r.headers["Location"]


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    ca = trustme.CA()
    folder = tmp_path_factory.mktemp("oidc-provider")
    ca_path = folder / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(served)
    app = oidc_provider_mock.app(require_client_registration=True, require_nonce=True)
    server = werkzeug.serving.make_server("127.0.0.1", 0, app, threaded=True, ssl_context=served)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    trusted = ssl.create_default_context()
    ca.configure_trust(trusted)
    try:
        yield Provider(f"https://127.0.0.1:{server.server_port}", ca_path, trusted)
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()


@pytest.fixture
def trusted(app: Quart, provider: Provider, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The app trusts the provider's CA (as FAQ_WEBHOOK_CA_BUNDLE would make it)."""
    settings = app.extensions["settings"]
    bundle = settings.model_copy(update={"faq_webhook_ca_bundle": str(provider.ca_path)})
    monkeypatch.setitem(app.extensions, "settings", bundle)
    forget_documents()
    yield
    forget_documents()


@dataclass
class Browser:
    """One browser: its cookies, kept from each response as a browser keeps them."""

    app: Quart
    cookies: dict[str, str] = field(default_factory=dict)
    set_cookies: list[str] = field(default_factory=list)  # the last response's

    async def get(self, url: str) -> Any:
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        client = self.app.test_client(use_cookies=False)
        r = await client.get(path, headers=headers if self.cookies else {})
        self.set_cookies = r.headers.get_all("Set-Cookie")
        for header in self.set_cookies:
            name, value = header.split(";", 1)[0].split("=", 1)
            if "Max-Age=0" in header:
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = value
        return r

    def attributes(self, name: str) -> list[str]:
        (cookie,) = [c for c in self.set_cookies if c.startswith(f"{name}=")]
        return [part.strip() for part in cookie.split(";")]


async def set_up(org: OrgClient, provider: Provider, **over: Any) -> dict[str, Any]:
    client_id, secret = await provider.register(org)
    config = {
        "issuer": provider.issuer,
        "clientId": client_id,
        "clientSecret": secret,
        "audiencesClaim": "groups",
        "displayName": "Acme SSO",
    } | over
    r = await put_readers(org, openIdConnect=config)
    assert r.status_code == 200, await r.get_data()
    return config


async def started(browser: Browser, org: OrgClient, return_to: str = "") -> str:
    """The help center's redirect to the provider: the authorization URL."""
    query = f"?{urlencode({'return_to': return_to})}" if return_to else ""
    r = await browser.get(f"/hc/{org.slug}/access/oidc{query}")
    assert r.status_code == 302, await r.get_data()
    return str(r.headers["Location"])


def with_param(url: str, name: str, value: str) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query)) | {name: value}
    return parts._replace(query=urlencode(query)).geturl()


async def refused_without_session(r: Any, status: int, reason: str) -> None:
    body = (await r.get_data()).decode()
    assert r.status_code == status, body
    assert reason in body, body
    assert not [c for c in r.headers.get_all("Set-Cookie") if c.startswith(f"{READER}=")]


async def test_a_reader_signs_in_and_reads_what_the_claim_allows(
    org_factory: OrgFactory, engine: AsyncEngine, provider: Provider, trusted: None
) -> None:
    site: Site = await build(org_factory, engine)
    org = site.org
    config = await set_up(org, provider)
    await provider.user("ann", email="ann@example.com", name="Ann", groups=["a", "Not A Slug"])
    # The sign-in page offers the provider by its display name.
    browser = Browser(org.client.app)
    page = await browser.get(f"/hc/{org.slug}/access")
    assert "Acme SSO" in (await page.get_data()).decode()
    alpha, beta = site.made["alpha"], site.made["beta"]
    going_to = f"/hc/{org.slug}/en/questions/{alpha['slug']}"
    authorization = await started(browser, org, going_to)
    sent = dict(parse_qsl(urlsplit(authorization).query))
    assert authorization.startswith(f"{provider.issuer}/oauth2/authorize?")
    assert sent["client_id"] == config["clientId"] and sent["response_type"] == "code"
    assert sent["code_challenge_method"] == "S256" and len(sent["code_challenge"]) == 43
    assert sent["state"] and sent["nonce"] and sent["scope"] == "openid email profile"
    assert sent["redirect_uri"] == f"http://localhost/hc/{org.slug}/access/oidc/callback"
    flow = browser.attributes(FLOW)
    assert "HttpOnly" in flow and "SameSite=Lax" in flow and "Max-Age=600" in flow
    assert f"Path=/hc/{org.slug}/access/oidc" in flow
    flow_value = browser.cookies[FLOW]
    back = await provider.sign_in(authorization, "ann")
    r = await browser.get(back)
    assert r.status_code == 303, await r.get_data()
    assert r.headers["Location"] == going_to
    session = browser.attributes(READER)
    assert "HttpOnly" in session and "SameSite=Lax" in session
    assert FLOW not in browser.cookies  # the flow cookie is cleared
    r = await browser.get(going_to)
    assert r.status_code == 200 and alpha["title"] in (await r.get_data()).decode()
    r = await browser.get(f"/hc/{org.slug}/access")  # who is signed in, from the claims
    shown = (await r.get_data()).decode().replace("\u2068", "").replace("\u2069", "")
    assert "Signed in as Ann" in shown  # (bidi isolates around the name dropped)
    r = await browser.get(f"/hc/{org.slug}/en/questions/{beta['slug']}")
    assert r.status_code == 404
    # The same answer brought back again (a replayed URL with the old flow cookie): the
    # provider refuses the spent code, and no session is made.
    replay = Browser(org.client.app, cookies={FLOW: flow_value})
    await refused_without_session(await replay.get(back), 401, "invalid_grant")


@pytest.fixture
async def oidc_org(org_factory: OrgFactory, provider: Provider, trusted: None) -> OrgClient:
    """A help center whose readers sign in with the provider (user ``bob``, audience ``a``)."""
    org = await org_factory(Plan.PRO)
    await enable(org)
    await set_up(org, provider)
    await provider.user("bob", email="bob@example.com", groups="a b")
    return org


async def test_an_answer_for_another_sign_in_or_without_one_is_refused(
    oidc_org: OrgClient, provider: Provider
) -> None:
    org = oidc_org
    browser = Browser(org.client.app)
    back = await provider.sign_in(await started(browser, org), "bob")
    # Another browser (no flow cookie) brings the answer: refused.
    stranger = Browser(org.client.app)
    await refused_without_session(await stranger.get(back), 401, "started in another browser")
    # The answer with another state: refused, and the flow is over (its cookie cleared).
    forged = with_param(back, "state", "another-state")
    await refused_without_session(await browser.get(forged), 401, "(state)")
    assert FLOW not in browser.cookies
    # A tampered flow cookie: refused.
    other = Browser(org.client.app)
    await started(other, org)
    other.cookies[FLOW] = other.cookies[FLOW][:-4] + "AAAA"  # tampered
    await refused_without_session(await other.get(back), 401, "started in another browser")


async def test_a_provider_refusal_is_shown_and_signs_no_one_in(
    oidc_org: OrgClient, provider: Provider
) -> None:
    browser = Browser(oidc_org.client.app)
    back = await provider.sign_in(await started(browser, oidc_org), "bob", deny=True)
    assert "error=access_denied" in back
    await refused_without_session(await browser.get(back), 401, "(access_denied)")


async def test_an_id_token_for_another_nonce_is_refused(
    oidc_org: OrgClient, provider: Provider
) -> None:
    """The provider signs what it was sent: an authorization request whose nonce was changed
    on the way gives a real, well-signed ID token that does not belong to this sign-in."""
    browser = Browser(oidc_org.client.app)
    authorization = with_param(await started(browser, oidc_org), "nonce", "someone-elses")
    back = await provider.sign_in(authorization, "bob")
    await refused_without_session(await browser.get(back), 401, "(nonce)")


async def test_a_wrong_client_secret_is_refused_by_the_provider(
    oidc_org: OrgClient, provider: Provider
) -> None:
    r = await put_readers(oidc_org, openIdConnect=await wrong_secret(oidc_org))
    assert r.status_code == 200
    browser = Browser(oidc_org.client.app)
    back = await provider.sign_in(await started(browser, oidc_org), "bob")
    await refused_without_session(await browser.get(back), 401, "invalid_client")


async def wrong_secret(org: OrgClient) -> dict[str, Any]:
    shown = (await (await org.get("/settings/readers")).get_json())["data"]["openIdConnect"]
    kept = {k: shown[k] for k in ("issuer", "clientId", "audiencesClaim", "displayName")}
    return kept | {"clientSecret": "not-the-secret"}


async def test_an_unreachable_provider_is_a_502_without_cookies(
    org_factory: OrgFactory, provider: Provider, trusted: None
) -> None:
    org = await org_factory(Plan.PRO)
    await enable(org)
    closed = provider.issuer.rsplit(":", 1)[0] + ":9"  # discard: nothing listens there
    r = await put_readers(org, openIdConnect={"issuer": closed, "clientId": "help-center"})
    assert r.status_code == 200, await r.get_data()
    browser = Browser(org.client.app)
    r = await browser.get(f"/hc/{org.slug}/access/oidc")
    await refused_without_session(r, 502, "could not be asked")
    assert r.headers.get_all("Set-Cookie") == []


async def stored_secret(engine: AsyncEngine, org: OrgClient) -> str:
    """The client secret as stored: its ciphertext."""
    async with engine.connect() as connection:
        readers = (
            await connection.execute(
                text("SELECT readers FROM shared.organizations WHERE slug = :s"), {"s": org.slug}
            )
        ).scalar_one()
    return str(readers["openIdConnect"]["clientSecret"])


async def test_the_client_secret_is_write_only_and_kept(
    oidc_org: OrgClient, provider: Provider, engine: AsyncEngine
) -> None:
    org = oidc_org
    shown = (await (await org.get("/settings/readers")).get_json())["data"]["openIdConnect"]
    assert shown["clientSecretSet"] is True and shown["issuer"] == provider.issuer
    assert shown["scopes"] == "openid email profile" and "clientSecret" not in shown
    kept_ciphertext = await stored_secret(engine, org)
    plain = decrypt_secret(kept_ciphertext)
    assert plain not in json.dumps(shown) and plain not in kept_ciphertext
    # `faq secret-key rotate` re-encrypts it (a new ciphertext of the same secret).
    assert await reencrypt_reader_secrets(engine) >= 1
    rotated = await stored_secret(engine, org)
    assert rotated != kept_ciphertext
    assert decrypt_secret(rotated) == decrypt_secret(kept_ciphertext)
    # A PUT without the secret, same issuer and client: the stored secret stays, and still
    # signs in (the provider checks it).
    same = {k: shown[k] for k in ("issuer", "clientId", "audiencesClaim", "displayName")}
    r = await put_readers(org, openIdConnect=same)
    assert (await r.get_json())["data"]["openIdConnect"]["clientSecretSet"] is True
    browser = Browser(org.client.app)
    back = await provider.sign_in(await started(browser, org), "bob")
    assert (await browser.get(back)).status_code == 303
    assert READER in browser.cookies
    # Another client id without a secret: none is kept (a public client).
    r = await put_readers(org, openIdConnect=same | {"clientId": "another-client"})
    assert (await r.get_json())["data"]["openIdConnect"]["clientSecretSet"] is False
    with pytest.raises(KeyError):
        await stored_secret(engine, org)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"issuer": "http://idp.example.com"}, "openIdConnect.issuer"),
        ({"issuer": "https://169.254.169.254"}, "openIdConnect.issuer"),
        ({"issuer": "https://idp.example.com/?tenant=1"}, "openIdConnect.issuer"),
        ({"scopes": "email profile"}, "openIdConnect.scopes"),
        ({"clientId": ""}, "openIdConnect"),  # pydantic's: the top field only
    ],
)
async def test_a_bad_setting_names_its_field(
    org: OrgClient, change: dict[str, Any], field: str
) -> None:
    config = {"issuer": "https://idp.example.com", "clientId": "help-center"} | change
    r = await put_readers(org, openIdConnect=config)
    body = await r.get_json()
    assert r.status_code == 400, body
    assert field in json.dumps(body), body
    shown = (await (await org.get("/settings/readers")).get_json())["data"]
    assert shown["openIdConnect"] is None


async def test_other_orgs_and_orgs_without_it_have_no_such_pages(
    oidc_org: OrgClient, org_factory: OrgFactory, provider: Provider
) -> None:
    without = await org_factory(Plan.PRO)
    await enable(without)
    browser = Browser(without.client.app)
    for path in ("/access/oidc", "/access/oidc/callback?code=x&state=y"):
        r = await browser.get(f"/hc/{without.slug}{path}")
        assert r.status_code == 404, path
    # One org's sign-in in progress is no sign-in at another org's callback.
    other = await org_factory(Plan.PRO)
    await enable(other)
    await set_up(other, provider)
    back = await provider.sign_in(await started(browser, oidc_org), "bob")
    elsewhere = urlsplit(back)._replace(path=f"/hc/{other.slug}/access/oidc/callback").geturl()
    stranger = Browser(other.client.app, cookies={FLOW: browser.cookies[FLOW]})
    await refused_without_session(await stranger.get(elsewhere), 401, "another browser")
