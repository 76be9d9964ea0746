"""The HTTP side of a delivery: one signed POST, sent only to the addresses just checked.

- ``attempt``: sign afresh (``api/webhooks/signing.py``), resolve the host again and refuse
  non-public addresses (``resolve_checked``), POST with no redirects, a total timeout of
  ``FAQ_WEBHOOK_TIMEOUT_SECONDS`` and at most BODY_CAP_BYTES of the response read. The
  receiver's faults become the ``Outcome``; it never raises for them.
- ``CheckedResolver``: the connector's resolver; it answers with the addresses this delivery
  checked (``_target``) and nothing else, so DNS rebinding between the check and the
  connection changes nothing. SNI and ``Host`` stay the URL's host.
- ``http_session``: the event loop's aiohttp session (``tenancy.loop_resources.per_loop``): TLS
  trusting ``FAQ_WEBHOOK_CA_BUNDLE`` when set, no connection limit per host (webhooks sharing
  a host must not queue behind each other), kept-alive connections, no decompression.
  ``close`` closes it early (made again on next use); the loop's resources close it anyway.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import socket
import ssl
import time
from dataclasses import dataclass

import aiohttp
import structlog
from aiohttp.abc import AbstractResolver, ResolveResult
from cryptography.fernet import InvalidToken

from api.webhooks.signing import decrypt_secret, delivery_body, signed_request
from api.webhooks.url_safety import CheckedTarget, UnsafeUrl, resolve_checked
from tasks.deliveries.attempts import Claim, Outcome
from tenancy.clock import utcnow
from tenancy.loop_resources import peek, per_loop
from tenancy.settings import Settings

log = structlog.get_logger(__name__)
BODY_CAP_BYTES = 2048
_HTTP = "deliveries.http"

_target: contextvars.ContextVar[CheckedTarget | None] = contextvars.ContextVar(
    "webhook_target", default=None
)


class CheckedResolver(AbstractResolver):
    """Answers with the addresses this delivery checked, and nothing else: no second lookup
    that DNS rebinding could change between the check and the connection."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        target = _target.get()
        if target is None or target.host != host.lower():
            raise OSError(f"{host} was not checked for this delivery")
        return [
            {
                "hostname": host,
                "host": str(address),
                "port": port,
                "family": socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in target.addresses
        ]

    async def close(self) -> None:
        return None


# ---- the event loop's session ------------------------------------------------------------


@dataclass
class _Http:
    """The loop's session, if made (a closed one is made again on next use)."""

    session: aiohttp.ClientSession | None = None


def _ssl_context(settings: Settings) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if settings.faq_webhook_ca_bundle:
        context.load_verify_locations(cafile=settings.faq_webhook_ca_bundle)
    return context


def _new_session(settings: Settings) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(
        resolver=CheckedResolver(),
        use_dns_cache=False,
        ssl=_ssl_context(settings),
        limit=0,
        limit_per_host=0,  # webhooks sharing a host must not queue behind each other
        keepalive_timeout=30,
    )
    return aiohttp.ClientSession(connector=connector, auto_decompress=False, raise_for_status=False)


async def _close(held: _Http) -> None:
    session, held.session = held.session, None
    if session is not None:
        await session.close()


def http_session(settings: Settings) -> aiohttp.ClientSession:
    """The running loop's session (made with ``settings`` when there is none)."""
    held = per_loop(_HTTP, _Http, _close)
    if held.session is None or held.session.closed:
        held.session = _new_session(settings)
    return held.session


async def close() -> None:
    """Close the running loop's session now (tests that need one with other settings)."""
    held = peek(_HTTP)
    if held is not None:
        await _close(held)


# ---- one attempt ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _decrypted(keys: tuple[str, ...], ciphertext: str) -> str:
    return decrypt_secret(ciphertext)


def _secret(ciphertext: str, settings: Settings) -> str:
    """A webhook's secret, decrypted once per ciphertext and ``FAQ_SECRET_KEY`` (a rotation
    re-encrypts it: a new ciphertext, a new entry); a failure is not kept."""
    return _decrypted(tuple(settings.secret_keys()), ciphertext)


async def _read_capped(response: aiohttp.ClientResponse) -> bytes:
    """At most BODY_CAP_BYTES of the body: a 1 GB answer is never read whole."""
    data = b""
    while len(data) < BODY_CAP_BYTES:
        chunk = await response.content.read(BODY_CAP_BYTES - len(data))
        if not chunk:
            break
        data += chunk
    return data


async def attempt(
    claim: Claim, settings: Settings, http: aiohttp.ClientSession | None = None
) -> Outcome:
    """One signed POST (through ``http``, else the loop's session). Never raises for the
    receiver's faults: they become the outcome."""
    signed_at = utcnow()
    try:
        secret = _secret(claim.secret_ciphertext, settings)
        raw, headers, body = signed_request(
            secret, claim.delivery_id, claim.event, claim.data, signed_at
        )
    except (InvalidToken, ValueError) as exc:
        # FAQ_SECRET_KEY changed, or a corrupt row: nothing may be sent unsigned.
        log.warning(
            "delivery_failed",
            delivery_id=claim.delivery_id,
            webhook_id=claim.webhook_id,
            attempt=claim.attempt_number,
            error=f"cannot sign the delivery: {type(exc).__name__}",
        )
        return Outcome(
            at=signed_at,
            status=None,
            duration_ms=0,
            error=f"cannot sign the delivery: {type(exc).__name__}",
            response_body=None,
            retry_after=None,
            body=delivery_body(claim.delivery_id, claim.event, claim.data, signed_at),
        )
    timeout = settings.faq_webhook_timeout_seconds
    started = time.monotonic()
    status: int | None = None
    error: str | None = None
    response_body: bytes | None = None
    retry_after: str | None = None
    try:
        async with asyncio.timeout(timeout):
            target = await resolve_checked(
                claim.url, allow_private=settings.faq_webhook_allow_private_networks
            )
            reset = _target.set(target)
            try:
                async with (http or http_session(settings)).post(
                    claim.url, data=raw, headers=headers, allow_redirects=False
                ) as response:
                    status = response.status
                    retry_after = response.headers.get("Retry-After")
                    response_body = await _read_capped(response)
            finally:
                _target.reset(reset)
    except UnsafeUrl as exc:  # an unresolvable name too, in the same words as a private one
        error = f"refused: {exc}"
    except TimeoutError:
        if status is None:
            error = f"no response within {timeout:g} seconds"
        else:
            error = "the response body did not arrive within the timeout"
    except (aiohttp.ClientError, OSError, ssl.SSLError) as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
    if status is not None and 300 <= status < 400:
        error = error or "redirects are not followed"
    elif status is not None and not 200 <= status < 300:
        error = error or f"the receiver answered {status}"
    if error is not None:
        log.warning(
            "delivery_refused" if error.startswith("refused: ") else "delivery_failed",
            delivery_id=claim.delivery_id,
            webhook_id=claim.webhook_id,
            webhook_event=claim.event,
            attempt=claim.attempt_number,
            status=status,
            error=error,
        )
    return Outcome(
        at=signed_at,
        status=status,
        duration_ms=int((time.monotonic() - started) * 1000),
        error=error,
        response_body=response_body.decode("utf-8", "replace") if response_body else None,
        retry_after=retry_after,
        body=body,
    )
