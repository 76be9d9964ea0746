"""Who the client is, behind the proxies the service trusts, and the only form of its address
that goes into a Redis key (no Quart: pure functions, ``api.http.binding`` applies them).

- ``forwarded_client``: the peer, unless the peer is a trusted proxy (``FAQ_TRUSTED_PROXIES``);
  then the ``X-Forwarded-For`` hops are walked from the right (each proxy appends the address
  it received from) and the client is the first hop that is not a trusted proxy. Hops left of
  it were written by the client and are never read, so a spoofed left-most hop changes
  nothing. A hop that is not an address (``unknown``, an RFC 7239 obfuscated name, garbage)
  stops the walk: the trusted hop that passed it on is the client. Every hop trusted: the
  left-most one walked. At most ``MAX_HOPS`` hops are walked.
- ``rate_subject``: what the per-address limits count: the address, or for IPv6 its /64 (one
  subscriber holds a whole /64).
- ``AddressDigests``: an HMAC (keyed by ``FAQ_SECRET_KEY``) of the rate subject, the name a
  client address has in Redis keys; the raw address is never a key.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Iterable, Sequence

from tenancy.settings import Network, Settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_HOPS = 16  # X-Forwarded-For hops walked at most (a request crosses a few proxies)
MAX_ENTRY = 64  # longer than any address with a port and brackets: not an address
UNKNOWN = "unknown"
IPV6_SUBJECT_PREFIX = 64


def parse_address(text: str) -> Address | None:
    """An address as proxies write it: ``1.2.3.4``, ``1.2.3.4:80``, ``2001:db8::1``,
    ``[2001:db8::1]:443``, quoted or not; IPv4-mapped IPv6 as the IPv4 address. None for
    anything else."""
    text = text.strip().strip('"')
    if not text or len(text) > MAX_ENTRY:
        return None
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]  # IPv4 with a port
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_trusted(address: Address, trusted: Sequence[Network]) -> bool:
    return any(address in network for network in trusted)


def _hops_right_to_left(header_values: Iterable[str]) -> list[str]:
    """The last ``MAX_HOPS`` entries of the header lines (in order, as one list), right first."""
    joined = ",".join(header_values)
    entries = joined.rsplit(",", MAX_HOPS)
    if len(entries) > MAX_HOPS:
        entries = entries[1:]  # the rest of a longer header: never walked
    return [entry for entry in reversed(entries) if entry.strip()]


def forwarded_client(
    peer: str | None,
    header_values: Iterable[str],
    trusted: Sequence[Network],
    *,
    one_hop: bool = False,
) -> str:
    """The client's address (normalised) behind the ``trusted`` proxies; ``one_hop``: the
    deprecated ``FAQ_TRUST_FORWARDED_FOR`` (any peer trusted, the last hop is the client)."""
    if peer is None:
        return UNKNOWN
    client = parse_address(peer)
    if client is None:
        return peer[:MAX_ENTRY]  # not an IP peer (a Unix socket, a test client)
    if not (one_hop or is_trusted(client, trusted)):
        return str(client)
    for entry in _hops_right_to_left(header_values):
        hop = parse_address(entry)
        if hop is None:
            break
        client = hop
        if one_hop or not is_trusted(hop, trusted):
            break
    return str(client)


def client_behind_proxies(
    settings: Settings, peer: str | None, header_values: Iterable[str]
) -> str:
    """``forwarded_client`` with the service's settings: ``FAQ_TRUSTED_PROXIES``, else the
    deprecated ``FAQ_TRUST_FORWARDED_FOR`` (one hop from any peer)."""
    networks = settings.trusted_proxy_networks()
    return forwarded_client(
        peer, header_values, networks, one_hop=settings.faq_trust_forwarded_for and not networks
    )


def rate_subject(address: str) -> str:
    """What a per-address limit counts: the address, or for IPv6 its /64."""
    parsed = parse_address(address)
    if isinstance(parsed, ipaddress.IPv6Address):
        network = ipaddress.IPv6Network((parsed, IPV6_SUBJECT_PREFIX), strict=False)
        return str(network)
    return str(parsed) if parsed is not None else address[:MAX_ENTRY]


class AddressDigests:
    """The name of a client address in Redis keys: 32 hex characters of an HMAC-SHA256 of its
    rate subject (keyed once; each digest copies the keyed state)."""

    def __init__(self, secret: str) -> None:
        key = hashlib.sha256(f"faq-client-address:{secret}".encode()).digest()
        self._keyed = hmac.new(key, digestmod=hashlib.sha256)

    def __call__(self, address: str) -> str:
        mac = self._keyed.copy()
        mac.update(rate_subject(address).encode())
        return mac.hexdigest()[:32]
