"""Issue 42's soak: pooled keep-alive clients never lose a request (``python -m
bench.keep_alive_soak --requests 100000``).

Two client libraries (aiohttp's pool and urllib3's, the one requests uses), each with a few
connections kept alive, send a mix against one ``faq serve``: reads, accepted writes, and
writes refused before their body is read (a bad key on a body sent in a second TCP segment
now and then: the requests whose connection Hypercorn used to close without saying so).
A request that meets a dropped connection ("Server disconnected", a reset) counts as a
disconnect; the pools retry nothing. The figure is the number of disconnects (target 0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

CONNECTIONS = 4  # per client library
BODY = json.dumps({"description": "x" * 1_900}).encode()  # a PATCH of ~2 KB


def mix(i: int) -> str:
    return ("read", "write", "refused", "read", "refused_big")[i % 5]


def _setup(world: Any) -> tuple[str, str, str]:
    """An org, its admin key, one category to PATCH, and ``faq serve`` with the failed-auth
    limit out of reach (refusals stay 401s, not 429s)."""
    import urllib.request

    world.run("orgs", "create", "soak", "--plan", "ENTERPRISE")
    made = world.run("keys", "create", "soak", "--scopes", "admin", "--json")
    key = json.loads(made.stdout)["key"]
    server = world.serve({"FAQ_AUTH_FAILURES_PER_MINUTE": "100000000"})
    created = urllib.request.Request(
        f"{server.base}/api/v1/soak/categories",
        data=json.dumps({"name": "Soaked"}).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(created, timeout=30) as response:
        category = json.loads(response.read())["data"]["id"]
    return server.base, key, category


def _request(kind: str, key: str, category: str) -> tuple[str, str, dict[str, str], bytes]:
    auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    bad = {"Authorization": "Bearer faq_not_a_key", "Content-Type": "application/json"}
    path = f"/api/v1/soak/categories/{category}"
    if kind == "read":
        return "GET", path, auth, b""
    if kind == "write":
        return "PATCH", path, auth, BODY
    if kind == "refused":
        return "PATCH", path, bad, BODY
    return "PATCH", path, bad, BODY * 8


async def _aiohttp(base: str, key: str, category: str, count: int, seen: Counter[str]) -> None:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=CONNECTIONS, force_close=False)
    async with aiohttp.ClientSession(base, connector=connector) as session:
        sem = asyncio.Semaphore(CONNECTIONS)

        async def one(i: int) -> None:
            method, path, headers, body = _request(mix(i), key, category)
            async with sem:
                try:
                    data = body or None
                    async with session.request(method, path, headers=headers, data=data) as r:
                        await r.read()
                        seen[f"aiohttp {r.status}"] += 1
                except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as error:
                    seen[f"aiohttp disconnect {type(error).__name__}"] += 1

        await asyncio.gather(*(one(i) for i in range(count)))


def _urllib3(base: str, key: str, category: str, count: int, seen: Counter[str]) -> None:
    import urllib3

    pool = urllib3.HTTPConnectionPool(
        base.removeprefix("http://").split(":")[0],
        int(base.rsplit(":", 1)[1]),
        maxsize=CONNECTIONS,
        block=True,
        retries=False,
    )
    lock = threading.Lock()

    def worker(start: int) -> None:
        for i in range(start, count, CONNECTIONS):
            method, path, headers, body = _request(mix(i), key, category)
            try:
                r = pool.request(method, path, headers=headers, body=body or None)
                outcome = f"urllib3 {r.status}"
            except (urllib3.exceptions.ProtocolError, ConnectionError) as error:
                outcome = f"urllib3 disconnect {type(error).__name__}"
            with lock:
                seen[outcome] += 1

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def soak(world: Any, requests: int) -> dict[str, Any]:
    base, key, category = _setup(world)
    seen: Counter[str] = Counter()
    started = time.monotonic()
    half = requests // 2
    thread = threading.Thread(target=_urllib3, args=(base, key, category, half, seen))
    thread.start()
    asyncio.run(_aiohttp(base, key, category, requests - half, seen))
    thread.join()
    disconnects = sum(n for k, n in seen.items() if "disconnect" in k)
    return {
        "requests": requests,
        "seconds": round(time.monotonic() - started, 1),
        "disconnects": disconnects,
        "outcomes": dict(sorted(seen.items())),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.keep_alive_soak")
    parser.add_argument("--requests", type=int, default=100_000)
    args = parser.parse_args(argv)
    from bench.standalone import in_world

    found = in_world(lambda world: soak(world, args.requests))
    print(json.dumps(found, indent=1))
    return 0 if found["disconnects"] == 0 else 1


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parent.parent
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
