"""Who the client is behind a proxy (issue 26): the right-most ``X-Forwarded-For`` hop that is
not a trusted proxy (``FAQ_TRUSTED_PROXIES``), walked from the peer; and no raw client address
in any Redis key name."""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import ValidationError
from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from api.http.binding import client_address, peer_is_trusted_proxy
from api.http.client_addresses import forwarded_client, rate_subject
from tenancy.redis import connect
from tenancy.settings import Settings, get_settings
from tests.api.helpcenter.helpers import enable
from tests.api.keys.helpers import make_public_key
from tests.fixtures.orgs import OrgClient, make_org

POD_NETWORKS = "10.0.0.0/8, 172.16.0.0/12,192.168.0.0/16 fd00::/8"


def trusted(text: str = POD_NETWORKS) -> Any:
    return Settings(faq_trusted_proxies=text).trusted_proxy_networks()


# ---- the hop choice ------------------------------------------------------------------------

HOPS: list[tuple[str, str | None, list[str], str]] = [
    # (case, peer, X-Forwarded-For header lines, the client)
    ("no header, untrusted peer", "203.0.113.5", [], "203.0.113.5"),
    ("no header, trusted peer", "10.0.0.7", [], "10.0.0.7"),
    ("an untrusted peer's header is ignored", "198.51.100.9", ["1.2.3.4"], "198.51.100.9"),
    ("one proxy", "10.0.0.7", ["203.0.113.5"], "203.0.113.5"),
    ("spoofed left-most hops", "10.0.0.7", ["6.6.6.6, 7.7.7.7, 203.0.113.5"], "203.0.113.5"),
    ("two trusted proxies", "10.0.0.7", ["203.0.113.5, 10.9.8.7"], "203.0.113.5"),
    (
        "a spoofed trusted hop left of the client",
        "10.0.0.7",
        ["10.1.1.1, 203.0.113.5, 192.168.4.4"],
        "203.0.113.5",
    ),
    ("every hop trusted: the left-most", "10.0.0.7", ["192.168.1.2, 172.16.0.9"], "192.168.1.2"),
    ("multiple header lines, in order", "10.0.0.7", ["6.6.6.6", "203.0.113.5"], "203.0.113.5"),
    ("multiple lines, trusted last", "10.0.0.7", ["203.0.113.5", "10.2.2.2"], "203.0.113.5"),
    ("spaces and empty entries", "10.0.0.7", [" , 203.0.113.5 ,, "], "203.0.113.5"),
    ("IPv6 client", "10.0.0.7", ["2001:db8::5"], "2001:db8::5"),
    ("IPv6 proxy", "fd00::1", ["2001:db8::5, fd00::2"], "2001:db8::5"),
    ("IPv6 spelled long is normalised", "10.0.0.7", ["2001:0db8:0:0::5"], "2001:db8::5"),
    ("bracketed IPv6 with a port", "10.0.0.7", ["[2001:db8::5]:4711"], "2001:db8::5"),
    ("IPv4 with a port", "10.0.0.7", ["203.0.113.5:8080"], "203.0.113.5"),
    ("IPv4-mapped IPv6 peer", "::ffff:10.0.0.7", ["203.0.113.5"], "203.0.113.5"),
    ("IPv4-mapped IPv6 hop", "10.0.0.7", ["::ffff:203.0.113.5"], "203.0.113.5"),
    ("garbage hop: the trusted hop that passed it", "10.0.0.7", ["junk, 10.3.3.3"], "10.3.3.3"),
    ("garbage right after the peer", "10.0.0.7", ["unknown"], "10.0.0.7"),
    ("an obfuscated RFC 7239 name", "10.0.0.7", ["_hidden"], "10.0.0.7"),
    ("a hostname is not an address", "10.0.0.7", ["evil.example"], "10.0.0.7"),
    ("garbage left of the client is never read", "10.0.0.7", ["%%%, 203.0.113.5"], "203.0.113.5"),
    ("an overlong entry", "10.0.0.7", ["1" * 5000], "10.0.0.7"),
    ("a peer that is not an address", "<local>", ["203.0.113.5"], "<local>"),
    ("no peer at all", None, ["203.0.113.5"], "unknown"),
]


@pytest.mark.parametrize(("case", "peer", "header", "client"), HOPS, ids=[h[0] for h in HOPS])
def test_the_client_is_the_right_most_untrusted_hop(
    case: str, peer: str | None, header: list[str], client: str
) -> None:
    assert forwarded_client(peer, header, trusted()) == client, case


def test_nothing_is_trusted_by_default() -> None:
    assert Settings().trusted_proxy_networks() == ()
    assert forwarded_client("10.0.0.7", ["203.0.113.5"], ()) == "10.0.0.7"
    assert forwarded_client("127.0.0.1", ["203.0.113.5"], ()) == "127.0.0.1"


def test_a_long_chain_of_trusted_hops_is_walked_a_bounded_way() -> None:
    """A header of thousands of trusted hops costs a bounded walk; the spoofed left end of
    it is never reached."""
    chain = ", ".join(["6.6.6.6"] + [f"10.0.{n // 250}.{n % 250 + 1}" for n in range(5000)])
    found = forwarded_client("10.0.0.7", [chain], trusted())
    assert found != "6.6.6.6"
    assert ipaddress.ip_address(found) in ipaddress.ip_network("10.0.0.0/8")


def test_the_deprecated_boolean_trusts_any_peer_for_one_hop() -> None:
    """``FAQ_TRUST_FORWARDED_FOR=true`` without ``FAQ_TRUSTED_PROXIES`` (the old setting): the
    last hop, whoever the peer is; only the last."""
    assert forwarded_client("198.51.100.9", ["6.6.6.6, 203.0.113.5"], (), one_hop=True) == (
        "203.0.113.5"
    )
    assert forwarded_client("198.51.100.9", ["garbage"], (), one_hop=True) == "198.51.100.9"
    assert forwarded_client("198.51.100.9", [], (), one_hop=True) == "198.51.100.9"


@pytest.mark.parametrize(
    "bad", ["10.0.0.0/33", "not-a-network", "10.0.0.0/8,,garbage", "300.1.1.1", "10.0.0.1/8/8"]
)
def test_a_bad_trusted_proxy_list_is_refused_at_start_up(bad: str) -> None:
    with pytest.raises(ValidationError) as refused:
        Settings(faq_trusted_proxies=bad)
    assert "faq_trusted_proxies" in str(refused.value)


def test_trusted_proxies_take_addresses_and_networks() -> None:
    networks = trusted("10.0.0.5, 2001:db8::/32 192.168.0.0/16")
    assert [str(n) for n in networks] == ["10.0.0.5/32", "2001:db8::/32", "192.168.0.0/16"]
    # Host bits set are accepted (a network written from one of its addresses).
    assert [str(n) for n in trusted("10.1.2.3/8")] == ["10.0.0.0/8"]


def test_ipv6_clients_are_counted_per_64() -> None:
    """An IPv6 client holds a whole /64 (2^64 addresses): the limits count it as one."""
    assert rate_subject("2001:db8:1:2:aaaa::1") == rate_subject("2001:db8:1:2:bbbb::9")
    assert rate_subject("2001:db8:1:2::1") != rate_subject("2001:db8:1:3::1")
    assert rate_subject("203.0.113.5") != rate_subject("203.0.113.6")


# ---- through the app -----------------------------------------------------------------------


@pytest.fixture
async def proxied_app(engine: AsyncEngine) -> AsyncIterator[Quart]:
    """The app behind a proxy in 10.0.0.0/8, with a small failure limit, and a route of this
    test that shows what a request's ``client_address()`` and ``peer_is_trusted_proxy()`` are."""
    from api.app import create_app

    settings = get_settings().model_copy(
        update={"faq_trusted_proxies": "10.0.0.0/8", "faq_auth_failures_per_minute": 5}
    )
    app = create_app(settings)
    app.add_url_rule("/test-client-address", "test_client_address", who_am_i)
    async with app.test_app():
        yield app


async def who_am_i() -> dict[str, Any]:
    return {"client": client_address(), "behindProxy": peer_is_trusted_proxy()}


async def bad_key_via(app: Quart, org: OrgClient, peer: str, forwarded: str | None) -> int:
    headers = {"Authorization": "Bearer faq_" + secrets.token_urlsafe(32)}
    if forwarded is not None:
        headers["X-Forwarded-For"] = forwarded
    r = await app.test_client().get(
        f"/api/v1/{org.slug}/categories", headers=headers, scope_base={"client": (peer, 40000)}
    )
    return int(r.status_code)


def an_address(prefix: str = "203.0.113") -> str:
    return f"{prefix}.{secrets.randbelow(250) + 1}"


async def test_clients_behind_the_proxy_are_limited_apart(
    proxied_app: Quart, engine: AsyncEngine
) -> None:
    """300 bad keys a minute from one client behind the ingress no longer limit everyone
    behind it: each client is its own right-most untrusted hop, whatever it puts on the left."""
    from tests.tenancy.test_auth_abuse import in_one_window

    org = await make_org(engine, proxied_app.test_client())
    proxy, flooding, bystander = "10.20.30.40", "198.51.100.7", "198.51.100.8"
    await in_one_window()
    for n in range(5):
        # The flooding client changes its own (spoofed) left-most hops each time.
        assert await bad_key_via(proxied_app, org, proxy, f"{an_address()}, {flooding}") == 401, n
    assert await bad_key_via(proxied_app, org, proxy, f"6.6.6.{1}, {flooding}") == 429
    assert await bad_key_via(proxied_app, org, proxy, bystander) == 401
    # A second proxy hop in the trusted network changes nothing.
    assert await bad_key_via(proxied_app, org, proxy, f"{flooding}, 10.0.0.9") == 429
    # An untrusted peer's own X-Forwarded-For is its word: the peer is counted.
    outsider = "192.0.2.44"
    for _ in range(5):
        assert await bad_key_via(proxied_app, org, outsider, an_address()) == 401
    assert await bad_key_via(proxied_app, org, outsider, an_address()) == 429


async def seen_by_the_app(app: Quart, peer: str, forwarded: str | None) -> dict[str, Any]:
    headers = {} if forwarded is None else {"X-Forwarded-For": forwarded}
    r = await app.test_client().get(
        "/test-client-address", headers=headers, scope_base={"client": (peer, 1)}
    )
    assert r.status_code == 200
    seen: dict[str, Any] = await r.get_json()
    return seen


async def test_the_request_sees_the_chosen_client_and_whether_its_peer_is_a_proxy(
    proxied_app: Quart,
) -> None:
    """``client_address()`` and ``peer_is_trusted_proxy()`` of a request (the latter is what
    ``X-Forwarded-Proto`` is believed on)."""
    seen = await seen_by_the_app(proxied_app, "10.1.1.1", "6.6.6.6, 2001:db8::7")
    assert seen == {"client": "2001:db8::7", "behindProxy": True}
    seen = await seen_by_the_app(proxied_app, "192.0.2.1", "2001:db8::7")
    assert seen == {"client": "192.0.2.1", "behindProxy": False}
    seen = await seen_by_the_app(proxied_app, "10.1.1.1", None)
    assert seen == {"client": "10.1.1.1", "behindProxy": True}


async def test_the_deprecated_boolean_still_works(engine: AsyncEngine) -> None:
    """``FAQ_TRUST_FORWARDED_FOR=true`` alone: any peer, its last hop; ignored once
    ``FAQ_TRUSTED_PROXIES`` is set."""
    from api.app import create_app

    for update, client, behind_proxy in [
        ({"faq_trust_forwarded_for": True}, "203.0.113.9", True),
        (
            {"faq_trust_forwarded_for": True, "faq_trusted_proxies": "10.0.0.0/8"},
            "198.51.100.1",
            False,
        ),
    ]:
        app = create_app(get_settings().model_copy(update=update))
        app.add_url_rule("/test-client-address", "test_client_address", who_am_i)
        async with app.test_app():
            seen = await seen_by_the_app(app, "198.51.100.1", "6.6.6.6, 203.0.113.9")
        assert seen == {"client": client, "behindProxy": behind_proxy}


# ---- no raw address in Redis ---------------------------------------------------------------


async def test_no_raw_client_address_in_any_redis_key(app: Quart, org: OrgClient) -> None:
    """Failed authentications, a publishable key's per-address limit, help-center pages and
    searches from two distinctive addresses: no Redis key name holds either address."""
    await enable(org)
    public = (await make_public_key(org))["key"]
    addresses = ("203.0.113.177", "2001:db8:177::177")
    client = app.test_client()
    for address in addresses:
        scope = {"client": (address, 40000)}
        for token in ("faq_" + secrets.token_urlsafe(32), public):
            r = await client.get(
                f"/api/v1/{org.slug}/questions",
                headers={"Authorization": f"Bearer {token}"},
                scope_base=scope,
            )
            assert r.status_code in (200, 401)
        for path in ("/en", "/en/search?q=password", "/no-such-locale"):
            r = await client.get(f"/hc/{org.slug}{path}", scope_base=scope)
            assert r.status_code in (200, 404)
    redis = connect(get_settings().require_redis_url())
    try:
        names = [name.decode() async for name in redis.scan_iter(count=1_000)]
    finally:
        await redis.aclose()
    assert any(name.startswith("faq:authfail:") for name in names)  # the counters exist
    spellings = {s for a in addresses for s in (a, ipaddress.ip_address(a).exploded)}
    leaked = [name for name in names if any(s in name for s in spellings)]
    assert leaked == []
