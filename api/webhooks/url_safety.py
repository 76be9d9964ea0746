"""Which webhook URLs and addresses may be called (SSRF protection, CONTRACT sections 6 and 8).

A URL must be ``https``, name a host, carry no user-info and be at most 2048 characters. Its
host, in every spelling a client library would accept (``127.1``, ``2130706433``,
``0x7f000001``, ``0177.0.0.1``, ``[::ffff:127.0.0.1]``, ``localhost.``…), must not be a
loopback, private, link-local, CGNAT, multicast, reserved, unspecified or cloud-metadata address.
``FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS`` admits loopback, private and CGNAT ranges (dev and tests);
metadata addresses, link-local, site-local (``fec0::/10``), multicast, reserved and unspecified
addresses are refused always.

A literal address is refused with its reason. A *name* that answers a non-public address is
refused with one message (``NOT_PUBLIC``) whatever the address, and at delivery a name that does
not resolve gets that same message: the errors must not let a tenant map internal DNS.

The same rules run twice: at create/PATCH (``check_url``), and before every delivery
(``resolve_checked``), whose addresses are the only ones the delivery may connect to.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from yarl import URL

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Name -> addresses; the event loop's getaddrinfo unless told (tests give a fixed table).
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]

MAX_URL_LENGTH = 2048
RESOLVE_TIMEOUT_SECONDS = 3.0

# Cloud instance-metadata endpoints: refused even when private networks are allowed.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.123",  # AWS time sync
        "169.254.169.253",  # AWS DNS
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure wire server
        "192.0.0.192",  # Oracle Cloud (legacy)
        "fd00:ec2::254",  # AWS IPv6
        "fd00:ec2::23",  # AWS IPv6 DNS
    )
)
METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.internal",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.packet.net",
        "metadata.platformequinix.com",
    }
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_LINK_LOCAL = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"))
_SITE_LOCAL = ipaddress.ip_network("fec0::/10")  # deprecated (RFC 3879); ipaddress calls it global
NOT_PUBLIC = "the host does not resolve to a public address"
_HOST_NAME = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*\.?$")


class UnsafeUrl(ValueError):
    """The URL or an address it names may not be called; the message says why."""


class UnresolvableName(UnsafeUrl, OSError):
    """At delivery, a name that does not resolve: refused in the words of a name that answers
    only non-public addresses (``NOT_PUBLIC``), so the delivery log cannot map internal DNS;
    still an ``OSError`` (a failed lookup) to its callers."""


@dataclass(frozen=True)
class CheckedTarget:
    """A host and the addresses a delivery may connect to (all of them checked)."""

    host: str
    port: int
    addresses: tuple[IPAddress, ...]


# ---- addresses ---------------------------------------------------------------------------


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries (mapped, 6to4, Teredo, NAT64, compatible)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if any(address in net for net in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if int(address) >> 32 == 0 and int(address) > 1:  # IPv4-compatible ::a.b.c.d
        return ipaddress.IPv4Address(int(address))
    return None


def address_problem(address: IPAddress, *, allow_private: bool) -> str | None:
    """Why a delivery may not connect to ``address``, or None when it may."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            return "a scoped (zone) IPv6 address"
        address = ipaddress.IPv6Address(int(address))
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            problem = address_problem(embedded, allow_private=allow_private)
            return f"{problem} (embedded in IPv6)" if problem else None
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if any(address.version == net.version and address in net for net in _LINK_LOCAL):
        return "a link-local address"
    if isinstance(address, ipaddress.IPv6Address) and address in _SITE_LOCAL:
        return "a site-local address"
    if address.is_loopback:
        return None if allow_private else "a loopback address"
    if isinstance(address, ipaddress.IPv4Address) and address in _CGNAT:
        return None if allow_private else "a shared (CGNAT) address"
    if address.is_reserved:
        return "a reserved address"
    if address.is_private:
        # is_private also covers 0.0.0.0/8, 240/4-style and documentation ranges; only the
        # networks a developer runs receivers in are admitted by the switch.
        if allow_private and _is_local_network(address):
            return None
        return "a private address" if _is_local_network(address) else "a reserved address"
    if not address.is_global:
        return "a non-public address"
    return None


def _is_local_network(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv4Address):
        return any(
            address in ipaddress.ip_network(net)
            for net in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
        )
    return address in ipaddress.ip_network("fc00::/7")


# ---- host spellings ------------------------------------------------------------------------


def _legacy_ipv4_part(part: str) -> int:
    if part.lower().startswith("0x"):
        digits = part[2:]
        return int(digits, 16) if digits else 0
    if len(part) > 1 and part.startswith("0"):
        return int(part, 8)
    return int(part, 10)


def parse_ipv4_spelling(host: str) -> ipaddress.IPv4Address | None:
    """IPv4 in every form inet_aton and browsers accept (``127.1``, ``2130706433``,
    ``0x7f000001``, ``0177.0.0.1``). None when the host is not numeric; UnsafeUrl when it
    looks numeric but is not a valid address."""
    parts = host.removesuffix(".").split(".")
    last = parts[-1].lower()
    if not (last.isdigit() or re.fullmatch(r"0x[0-9a-f]*", last)):
        return None
    try:
        numbers = [_legacy_ipv4_part(p) for p in parts]
    except ValueError:
        raise UnsafeUrl("the host is not a valid IPv4 address") from None
    if len(numbers) > 4 or any(n < 0 for n in numbers):
        raise UnsafeUrl("the host is not a valid IPv4 address")
    *head, tail = numbers
    if any(n > 255 for n in head) or tail >= 256 ** (5 - len(numbers)):
        raise UnsafeUrl("the host is not a valid IPv4 address")
    value = tail
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def literal_address(host: str) -> IPAddress | None:
    """The address a host spells literally, in any form, or None for a name."""
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise UnsafeUrl("the host is not a valid IPv6 address") from None
    return parse_ipv4_spelling(host)


def _is_localhost_name(name: str) -> bool:
    return name == "localhost" or name.endswith(".localhost")


# ---- URLs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedUrl:
    host: str  # lower-case; IDNA (ASCII) for names; no brackets for IPv6
    port: int
    literal: IPAddress | None


def parse_url(url: str) -> ParsedUrl:
    """The syntactic rules: https, a host, no user-info, at most 2048 characters."""
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeUrl(f"the URL is longer than {MAX_URL_LENGTH} characters")
    if any(ch.isspace() or ord(ch) < 0x20 or ch == "\\" for ch in url):
        raise UnsafeUrl("the URL contains whitespace, control characters or backslashes")
    try:
        parsed = URL(url)
    except ValueError:
        raise UnsafeUrl("the URL cannot be parsed") from None
    if parsed.scheme != "https":
        raise UnsafeUrl("the URL must use https")
    if parsed.user is not None or parsed.password is not None or "@" in urlsplit(url).netloc:
        raise UnsafeUrl("the URL must not carry user-info")
    raw_host = parsed.raw_host
    if not raw_host:
        raise UnsafeUrl("the URL has no host")
    host = raw_host.lower()
    try:
        port = parsed.port
    except ValueError:
        raise UnsafeUrl("the URL has an invalid port") from None
    if port is None or not 0 < port < 65536:
        raise UnsafeUrl("the URL has an invalid port")
    if "%" in host:
        raise UnsafeUrl("the host must not be percent-encoded or carry a zone id")
    literal = literal_address(host)
    if literal is None and not _HOST_NAME.fullmatch(host):
        raise UnsafeUrl("the host is not a valid name")
    return ParsedUrl(host, port, literal)


async def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address the name resolves to (the event loop's getaddrinfo)."""
    loop = asyncio.get_running_loop()
    infos = await asyncio.wait_for(
        loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT_SECONDS
    )
    addresses: list[IPAddress] = []
    for family, *_rest, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def _check_addresses(addresses: list[IPAddress], allow_private: bool) -> None:
    """A name's answers: refused with ``NOT_PUBLIC`` alone, never which range was hit."""
    for address in addresses:
        if address_problem(address, allow_private=allow_private) is not None:
            raise UnsafeUrl(NOT_PUBLIC)


def _check_name(host: str, allow_private: bool) -> None:
    name = host.removesuffix(".")
    if name in METADATA_NAMES:
        raise UnsafeUrl("the host is a cloud metadata name")
    if _is_localhost_name(name) and not allow_private:
        raise UnsafeUrl("the host is a loopback name")


async def check_url(url: str, *, allow_private: bool, resolver: Resolver | None = None) -> None:
    """The create/PATCH check. A name that does not resolve is accepted (it is checked again
    at every delivery); one that resolves must resolve only to allowed addresses."""
    parsed = parse_url(url)
    if parsed.literal is not None:
        problem = address_problem(parsed.literal, allow_private=allow_private)
        if problem is not None:
            raise UnsafeUrl(f"the host is {problem}")
        return
    _check_name(parsed.host, allow_private)
    try:
        addresses = await (resolver or resolve)(parsed.host, parsed.port)
    except (OSError, TimeoutError, UnicodeError):
        return
    _check_addresses(addresses, allow_private)


async def resolve_checked(
    url: str, *, allow_private: bool, resolver: Resolver | None = None
) -> CheckedTarget:
    """The delivery check: resolve again and return the only addresses to connect to.
    UnsafeUrl when the URL is refused, ``UnresolvableName`` (an UnsafeUrl and an OSError, with
    the message of a name that answers only non-public addresses) when the name does not
    resolve."""
    parsed = parse_url(url)
    if parsed.literal is not None:
        problem = address_problem(parsed.literal, allow_private=allow_private)
        if problem is not None:
            raise UnsafeUrl(f"the host is {problem}")
        return CheckedTarget(parsed.host, parsed.port, (parsed.literal,))
    _check_name(parsed.host, allow_private)
    try:
        addresses = await (resolver or resolve)(parsed.host, parsed.port)
    except (OSError, TimeoutError, UnicodeError):
        raise UnresolvableName(NOT_PUBLIC) from None
    if not addresses:
        raise UnresolvableName(NOT_PUBLIC)
    _check_addresses(addresses, allow_private)
    return CheckedTarget(parsed.host, parsed.port, tuple(addresses))
