"""A revoked key stops working within a second in every process: also when a lookup races the
revocation, and when the invalidation listener's connection dies without a word."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from quart import Quart
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from api.http.binding import Tenancy
from tenancy.db import shared_session
from tenancy.keys import hash_key, revoke_key
from tenancy.settings import get_settings
from tests.fixtures.orgs import OrgClient, make_org


async def revoke(engine: AsyncEngine, fingerprint: str) -> None:
    """Revoke from another connection, as `faq keys revoke` in another process would."""
    async with shared_session(engine) as session, session.begin():
        assert await revoke_key(session, fingerprint)


async def test_lookup_racing_a_revocation_does_not_refill_the_cache(
    app: Quart, org: OrgClient, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = app.extensions["tenancy"].directory
    digest = hash_key(org.keys["read"])
    read_done, go_on = asyncio.Event(), asyncio.Event()
    real_fetch = directory._fetch_key

    async def slow_fetch(wanted: str) -> Any:
        # The test seam: the first lookup of this key reads PostgreSQL for real, then is held
        # until the revocation has been committed and its NOTIFY handled by this process.
        record = await real_fetch(wanted)
        if wanted == digest and not read_done.is_set():
            read_done.set()
            await go_on.wait()
        return record

    monkeypatch.setattr(directory, "_fetch_key", slow_fetch)
    racing = asyncio.create_task(org.get("/categories", scope="read"))
    await asyncio.wait_for(read_done.wait(), 10)
    seen = directory.invalidations
    await revoke(engine, org.fingerprints["read"])
    deadline = time.monotonic() + 5
    while directory.invalidations == seen:  # the NOTIFY reached this process's listener
        assert time.monotonic() < deadline, "the revocation's NOTIFY never arrived"
        await asyncio.sleep(0.01)
    go_on.set()
    # That request read the key before the revocation: it may pass. It must not leave the key
    # in the cache behind it.
    assert (await racing).status_code == 200
    r = await org.get("/categories", scope="read")
    assert r.status_code == 401
    assert (await r.get_json())["error"]["code"] == "unauthorized"
    assert (await org.get("/categories", scope="write")).status_code == 200


@dataclass
class Pipe:
    listener: bool = False
    frozen: bool = False
    writers: list[asyncio.StreamWriter] = field(default_factory=list)


class SilencingProxy:
    """A TCP proxy in front of PostgreSQL that can make the LISTEN connections go silent: the
    sockets stay open and nothing more passes either way (a dropped NAT entry, a partition)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.target_port = host, port
        self.pipes: list[Pipe] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def live_listeners(self) -> list[Pipe]:
        return [p for p in self.pipes if p.listener and not p.frozen]

    def silence_listeners(self) -> None:
        for pipe in self.live_listeners():
            pipe.frozen = True

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(self.host, self.target_port)
        pipe = Pipe(writers=[client_w, server_w])
        self.pipes.append(pipe)
        pumps = [
            asyncio.create_task(self._pump(client_r, server_w, pipe, sniff=True)),
            asyncio.create_task(self._pump(server_r, client_w, pipe, sniff=False)),
        ]
        # Either side closing closes both (a cancel request waits for the server's EOF).
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for writer in pipe.writers:
            writer.close()
        for pump in pumps:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)

    async def _pump(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, pipe: Pipe, *, sniff: bool
    ) -> None:
        while data := await src.read(65536):
            if sniff and b"LISTEN " in data:
                pipe.listener = True
            if pipe.frozen:
                continue  # silently dropped, the socket kept open
            dst.write(data)
            await dst.drain()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for pipe in self.pipes:
            for writer in pipe.writers:
                writer.close()


@pytest.fixture
async def proxy() -> AsyncIterator[SilencingProxy]:
    url = make_url(get_settings().require_database_url())
    proxy = SilencingProxy(url.host or "127.0.0.1", url.port or 5432)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()


async def wait_for(condition: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


async def first_refusal(org: OrgClient, scope: str, seconds: float) -> float:
    """Seconds until a request with the key is refused (polling every 20 ms), or ``inf``."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        r = await org.get("/categories", scope=scope)
        if r.status_code == 401:
            return time.monotonic() - started
        assert r.status_code == 200
        await asyncio.sleep(0.02)
    return float("inf")


@pytest.mark.serial  # a bound on time: run with the machine to itself
async def test_revocation_is_seen_within_a_second_when_the_listener_goes_silent(
    proxy: SilencingProxy, engine: AsyncEngine
) -> None:
    from api.app import create_app

    url = make_url(get_settings().require_database_url()).set(port=proxy.port)
    settings = get_settings().model_copy(
        update={"database_url": url.render_as_string(hide_password=False)}
    )
    app = create_app(settings)
    async with app.test_app():
        ext: Tenancy = app.extensions["tenancy"]
        org = await make_org(engine, app.test_client())
        await wait_for(lambda: proxy.live_listeners(), 10, "the directory never listened")
        assert (await org.get("/categories", scope="read")).status_code == 200
        # Older than the one second that entries live without a working listener.
        await asyncio.sleep(1.3)
        assert (await org.get("/categories", scope="read")).status_code == 200

        proxy.silence_listeners()
        await revoke(engine, org.fingerprints["read"])
        waited = await first_refusal(org, "read", 5.0)
        assert waited <= 1.25, f"the revoked key still worked {waited:.2f}s after revocation"

        # The keep-alive notices, the listener comes back on a new connection, and NOTIFY
        # works again: the next revocation is seen at once.
        await wait_for(lambda: proxy.live_listeners(), 15, "the listener never came back")
        await wait_for(lambda: ext.directory.listening, 5, "the directory is not listening")
        assert (await org.get("/categories", scope="write")).status_code == 200
        await asyncio.sleep(1.3)
        await revoke(engine, org.fingerprints["write"])
        waited = await first_refusal(org, "write", 5.0)
        assert waited <= 0.5, f"the revoked key still worked {waited:.2f}s after revocation"
