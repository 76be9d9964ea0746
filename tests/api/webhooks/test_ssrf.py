"""SSRF protection: every spelling of a non-public host is refused at create and PATCH, and
every delivery resolves again, refuses non-public addresses and connects only to what it checked.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from api.webhooks.url_safety import (
    CheckedTarget,
    UnsafeUrl,
    address_problem,
    check_url,
    parse_ipv4_spelling,
    resolve_checked,
)
from tenancy.settings import get_settings
from tests.api.webhooks.conftest import create_webhook
from tests.fixtures.receiver import Endpoint, Receiver

REFUSED = [
    # not https, user-info, no host, too long
    "http://example.com/hook",
    "ftp://example.com/hook",
    "HTTP://example.com/hook",
    "https://user:pass@example.com/hook",
    "https://user@example.com/hook",
    "https://@example.com/hook",
    "https:///hook",
    "https://example.com:0/",
    "https://" + "a" * 2040 + ".com/",
    # loopback, in every spelling
    "https://127.0.0.1/",
    "https://127.1/",
    "https://127.0.1/",
    "https://2130706433/",
    "https://0x7f000001/",
    "https://0x7f.0x0.0x0.0x1/",
    "https://0177.0.0.1/",
    "https://017700000001/",
    "https://127.000.000.001/",
    "https://127.0.0.1./",
    "https://[::1]/",
    "https://[0:0:0:0:0:0:0:1]/",
    "https://[::ffff:127.0.0.1]/",
    "https://[::ffff:7f00:1]/",
    "https://[::127.0.0.1]/",
    "https://[64:ff9b::127.0.0.1]/",
    "https://[2002:7f00:1::1]/",
    "https://localhost/",
    "https://localhost./",
    "https://LOCALHOST/",
    "https://api.localhost/",
    "https://127.0.0.%31/",
    # private
    "https://10.0.0.1/",
    "https://10.255.255.255/",
    "https://172.16.0.1/",
    "https://172.31.255.1/",
    "https://192.168.0.1/",
    "https://3232235521/",
    "https://[fd00::1]/",
    "https://[fc00::1]/",
    "https://[::ffff:10.0.0.1]/",
    # link-local
    "https://169.254.1.1/",
    "https://[fe80::1]/",
    "https://[fe80::1%25eth0]/",
    # site-local (fec0::/10, deprecated by RFC 3879)
    "https://[fec0::1]/",
    "https://[feff:ffff::1]/",
    # CGNAT
    "https://100.64.0.1/",
    "https://100.127.255.254/",
    # multicast, reserved, unspecified, broadcast
    "https://224.0.0.1/",
    "https://239.255.255.250/",
    "https://[ff02::1]/",
    "https://240.0.0.1/",
    "https://255.255.255.255/",
    "https://0.0.0.0/",
    "https://0/",
    "https://[::]/",
    "https://192.0.2.1/",
    "https://198.18.0.1/",
    # cloud metadata
    "https://169.254.169.254/latest/meta-data/",
    "https://2852039166/",
    "https://0xa9fea9fe/",
    "https://0251.0376.0251.0376/",
    "https://[::ffff:169.254.169.254]/",
    "https://[::ffff:a9fe:a9fe]/",
    "https://169.254.170.2/v2/credentials",
    "https://100.100.100.200/",
    "https://[fd00:ec2::254]/",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://metadata.google.internal./",
    "https://METADATA.GOOGLE.INTERNAL/",
    "https://metadata/",
    "https://instance-data/",
    # malformed hosts
    "https://1.2.3.4.5/",
    "https://256.1.1.1/",
    "https://exa mple.com/",
    "https://example.com\\@127.0.0.1/",
]
METADATA = [u for u in REFUSED if "169.254.169" in u or "metadata" in u or "a9fe" in u]


@pytest.fixture
def public_only() -> Iterator[None]:
    """The production default: FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS off (tests turn it on)."""
    previous = os.environ.get("FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS")
    os.environ["FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS"] = "false"
    get_settings.cache_clear()
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS", None)
        else:
            os.environ["FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS"] = previous
        get_settings.cache_clear()


@pytest.mark.parametrize("url", REFUSED)
async def test_refused_urls(url: str):
    with pytest.raises(UnsafeUrl):
        await check_url(url, allow_private=False)


@pytest.mark.parametrize(
    "url",
    [
        *METADATA,
        "https://169.254.1.1/",
        "https://[ff02::1]/",
        "https://0.0.0.0/",
        "https://[fec0::1]/",
    ],
)
async def test_metadata_and_link_local_stay_refused_when_private_is_allowed(url: str):
    with pytest.raises(UnsafeUrl):
        await check_url(url, allow_private=True)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/hook",
        "https://EXAMPLE.com:8443/a/b?c=d",
        "https://8.8.8.8/",
        "https://[2606:4700:4700::1111]/",
        "https://name-that-does-not-resolve.invalid/hook",
        "https://bücher.example/hook",
    ],
)
async def test_public_urls_are_accepted(url: str):
    await check_url(url, allow_private=False)


@pytest.mark.parametrize(
    "url",
    ["https://127.0.0.1:8443/", "https://localhost/", "https://10.1.2.3/", "https://[fd00::5]/"],
)
async def test_private_switch_admits_loopback_and_private(url: str):
    await check_url(url, allow_private=True)


@pytest.mark.parametrize(
    ("spelling", "address"),
    [
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("192.168.257", "192.168.1.1"),
        ("example.com", None),
    ],
)
def test_legacy_ipv4_spellings(spelling: str, address: str | None):
    parsed = parse_ipv4_spelling(spelling)
    assert (str(parsed) if parsed else None) == address


def test_public_addresses_pass():
    for a in ("8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "93.184.216.34"):
        assert address_problem(ipaddress.ip_address(a), allow_private=False) is None


@pytest.mark.parametrize("url", REFUSED[9:40] + METADATA[:4])
async def test_create_refuses_with_validation_error(org, public_only, url: str):
    r = await org.post("/webhooks", json={"url": url, "events": ["category.created"]})
    assert r.status_code == 400, url
    error = (await r.get_json())["error"]
    assert error["code"] == "validation_error"
    assert error["details"][0]["field"] == "url"


async def test_every_listed_spelling_is_refused_by_the_api(org, public_only):
    for url in REFUSED:
        r = await org.post("/webhooks", json={"url": url, "events": ["category.created"]})
        assert r.status_code == 400, url
        assert (await r.get_json())["error"]["code"] == "validation_error", url


async def test_patch_refuses_with_validation_error(org, endpoint: Endpoint):
    hook = await create_webhook(org, endpoint.url)
    os.environ["FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS"] = "false"
    get_settings.cache_clear()
    try:
        for url in (
            "https://127.1/",
            "https://[::ffff:127.0.0.1]/",
            "https://localhost./",
            "https://169.254.169.254/",
            "http://example.com/",
        ):
            r = await org.patch(f"/webhooks/{hook['id']}", json={"url": url})
            assert r.status_code == 400, url
            assert (await r.get_json())["error"]["code"] == "validation_error"
    finally:
        os.environ["FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS"] = "true"
        get_settings.cache_clear()
    got = (await (await org.get(f"/webhooks/{hook['id']}")).get_json())["data"]
    assert got["url"] == endpoint.url


async def test_metadata_refused_by_the_api_even_when_private_is_allowed(org):
    for url in METADATA:
        r = await org.post("/webhooks", json={"url": url, "events": ["category.created"]})
        assert r.status_code == 400, url


# ---- at delivery ------------------------------------------------------------------------------


async def test_delivery_check_resolves_and_refuses():
    target = await resolve_checked("https://localhost:8443/x", allow_private=True)
    assert isinstance(target, CheckedTarget)
    assert target.host == "localhost" and target.port == 8443
    assert ipaddress.ip_address("127.0.0.1") in target.addresses
    with pytest.raises(UnsafeUrl):
        await resolve_checked("https://localhost:8443/x", allow_private=False)
    with pytest.raises(UnsafeUrl):
        await resolve_checked("https://169.254.169.254/", allow_private=True)
    with pytest.raises(OSError):
        await resolve_checked("https://name-that-does-not-resolve.invalid/", allow_private=False)


async def test_an_attempt_refuses_a_loopback_receiver_without_the_switch(receiver: Receiver):
    """The delivery path itself (not only create) refuses non-public addresses: with the
    switch off, an attempt at the loopback receiver fails before any connection; with it on,
    a name is resolved, checked and connected to through the checked addresses only."""
    from api.webhooks.signing import encrypt_secret, new_secret
    from tasks.deliveries.attempts import Claim
    from tasks.deliveries.transport import attempt, close

    endpoint = receiver.endpoint()
    claim = Claim(
        org_id="org_x",
        delivery_id="dlv_01JD0000000000000000000000",
        webhook_id="wh_01JD0000000000000000000000",
        event="ping",
        data={"webhookId": "wh_01JD0000000000000000000000"},
        url=receiver.url(endpoint.name, host="localhost"),
        secret_ciphertext=encrypt_secret(new_secret()),
        token="t",
        attempt_number=1,
    )
    base = get_settings().model_copy(update={"faq_webhook_ca_bundle": str(receiver.ca_path)})
    await close()
    try:
        for url in (endpoint.url, claim.url):
            closed = base.model_copy(update={"faq_webhook_allow_private_networks": False})
            outcome = await attempt(Claim(**{**claim.__dict__, "url": url}), closed)
            assert outcome.status is None and outcome.error, outcome
            assert outcome.error.startswith("refused"), outcome.error
        assert endpoint.requests == []
        opened = base.model_copy(update={"faq_webhook_allow_private_networks": True})
        outcome = await attempt(claim, opened)
    finally:
        await close()
    assert outcome.status == 200, outcome.error
    assert len(endpoint.requests) == 1
    assert endpoint.requests[0].headers["Host"] == f"localhost:{receiver.port}"


async def test_the_resolver_answers_only_for_the_checked_host():
    from tasks.deliveries.transport import CheckedResolver, _target

    resolver = CheckedResolver()
    with pytest.raises(OSError):
        await resolver.resolve("example.com", 443)
    token = _target.set(CheckedTarget("example.com", 443, (ipaddress.ip_address("93.184.216.34"),)))
    try:
        [answer] = await resolver.resolve("example.com", 443)
        assert answer["host"] == "93.184.216.34" and answer["hostname"] == "example.com"
        with pytest.raises(OSError):
            await resolver.resolve("rebound.example.net", 443)
    finally:
        _target.reset(token)


def fixed_dns(table: dict[str, list[str]]):
    """A resolver answering from a table (a stand-in for DNS, as a rebinding attacker's
    server would answer)."""

    async def resolver(host: str, port: int) -> list:
        if host not in table:
            raise OSError(f"{host} does not resolve")
        return [ipaddress.ip_address(a) for a in table[host]]

    return resolver


@pytest.mark.parametrize(
    "addresses",
    [
        ["10.0.0.5"],
        ["127.0.0.1"],
        ["169.254.169.254"],
        ["::1"],
        ["::ffff:192.168.0.1"],
        ["93.184.216.34", "10.0.0.5"],  # one bad answer among good ones is enough
    ],
)
async def test_names_resolving_to_non_public_addresses_are_refused(addresses: list[str]):
    dns = fixed_dns({"hooks.example.com": addresses})
    with pytest.raises(UnsafeUrl):
        await check_url("https://hooks.example.com/x", allow_private=False, resolver=dns)
    with pytest.raises(UnsafeUrl):
        await resolve_checked("https://hooks.example.com/x", allow_private=False, resolver=dns)


async def test_dns_rebinding_is_caught_at_delivery():
    """Public at create, private at delivery: the delivery's own lookup refuses it, and the
    addresses it returns are the only ones the connection may use."""
    public = fixed_dns({"rebind.example.com": ["93.184.216.34"]})
    await check_url("https://rebind.example.com/x", allow_private=False, resolver=public)
    target = await resolve_checked(
        "https://rebind.example.com/x", allow_private=False, resolver=public
    )
    assert target.addresses == (ipaddress.ip_address("93.184.216.34"),)
    rebound = fixed_dns({"rebind.example.com": ["127.0.0.1"]})
    with pytest.raises(UnsafeUrl):
        await resolve_checked("https://rebind.example.com/x", allow_private=False, resolver=rebound)
    metadata = fixed_dns({"rebind.example.com": ["169.254.169.254"]})
    with pytest.raises(UnsafeUrl):
        await resolve_checked("https://rebind.example.com/x", allow_private=True, resolver=metadata)


async def test_a_name_that_does_not_resolve_is_accepted_at_create_only():
    dns = fixed_dns({})
    await check_url("https://later.example.com/x", allow_private=False, resolver=dns)
    with pytest.raises(OSError):
        await resolve_checked("https://later.example.com/x", allow_private=False, resolver=dns)


NON_PUBLIC_ANSWERS = {
    "private.example.com": ["10.0.0.5"],
    "loopback.example.com": ["127.0.0.1"],
    "metadata.example.com": ["169.254.169.254"],
    "link-local.example.com": ["fe80::1"],
    "site-local.example.com": ["fec0::1"],
    "cgnat.example.com": ["100.64.0.1"],
    "mixed.example.com": ["93.184.216.34", "fd00::1"],
}
REVEALING = ("private", "loopback", "metadata", "link-local", "site-local", "CGNAT", "resolves to")


async def test_a_name_resolving_privately_reveals_nothing_of_the_address() -> None:
    """A tenant must not map internal DNS through the errors: every name answering a
    non-public address is refused with one message, naming no address or range, and at
    delivery that message is the one a name that does not resolve gets."""
    dns = fixed_dns(NON_PUBLIC_ANSWERS)
    with pytest.raises(OSError) as unresolvable:
        await resolve_checked("https://nowhere.example.com/x", allow_private=False, resolver=dns)
    at_create, at_delivery = set(), set()
    for host in NON_PUBLIC_ANSWERS:
        with pytest.raises(UnsafeUrl) as refused:
            await check_url(f"https://{host}/x", allow_private=False, resolver=dns)
        at_create.add(str(refused.value))
        with pytest.raises(UnsafeUrl) as refused:
            await resolve_checked(f"https://{host}/x", allow_private=False, resolver=dns)
        at_delivery.add(str(refused.value))
    assert len(at_create) == 1, at_create
    assert at_delivery == at_create == {str(unresolvable.value)}
    assert not any(word.lower() in str(unresolvable.value).lower() for word in REVEALING)


async def test_literal_addresses_keep_a_clear_reason() -> None:
    for url, reason in (
        ("https://10.0.0.5/", "private"),
        ("https://[fec0::1]/", "site-local"),
        ("https://169.254.169.254/", "metadata"),
    ):
        with pytest.raises(UnsafeUrl, match=reason):
            await check_url(url, allow_private=False)


def _a_privately_resolving_name() -> tuple[str, set[str]]:
    """This machine's own name (which /etc/hosts points at a loopback or container address),
    or Debian's ip6-localhost names: the first that resolves, and only to non-public addresses."""
    for host in (socket.gethostname().lower(), "ip6-localhost", "ip6-loopback"):
        try:
            infos = socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
        except OSError:
            continue
        answers = {str(info[4][0]) for info in infos}
        if not any(ipaddress.ip_address(a.split("%")[0]).is_global for a in answers):
            return host, answers
    raise AssertionError("no name on this machine resolves to a non-public address")


async def test_the_api_refuses_a_privately_resolving_name_without_saying_so(
    org: Any, public_only: None
) -> None:
    """Through real DNS (this machine's own name, which /etc/hosts points at a non-public
    address on Debian and in containers): the body names no address or range."""
    host, answers = _a_privately_resolving_name()
    r = await org.post(
        "/webhooks", json={"url": f"https://{host}/x", "events": ["category.created"]}
    )
    assert r.status_code == 400
    error = (await r.get_json())["error"]
    assert error["code"] == "validation_error"
    dns = fixed_dns(NON_PUBLIC_ANSWERS)
    with pytest.raises(UnsafeUrl) as refused:
        await check_url("https://metadata.example.com/x", allow_private=False, resolver=dns)
    assert error["details"] == [{"field": "url", "issue": str(refused.value)}]
    text = str(error)
    assert not any(word.lower() in text.lower() for word in REVEALING), text
    assert not any(a in text for a in answers), text
