"""A noisy neighbour: one PRO org at its plan's full rate limit, mixing creates, one-letter
searches and reorders, beside twenty quiet orgs reading; the quiet orgs' p99 beside the same
readers without the noisy org, in the same run.

    .venv/bin/python -m bench.noisy [--seconds 5]

Standalone it starts its own embedded PostgreSQL and Redis (``bench.services.World``), runs
``faq migrate``, creates twenty quiet orgs through the real provisioning code (``bench.seed``,
ENTERPRISE, 25 questions each) and the noisy org with ``faq orgs create --plan PRO`` (a
``read,write`` key, ``NOISY_QUESTIONS`` questions created through the API). From ``make
bench``: ``noisy_rows(bench)`` creates the noisy org in the bench's world, uses twenty of the
bench's orgs as the quiet ones and returns the row
(``for entry in noisy_rows(self): self.row(**entry)``).

The rate limit is the plan's real one. The bench world sets every plan's limit out of reach
(``FAQ_RATE_LIMITS``, a per-plan setting read by each server process), so this row serves the
app in a server of its own (response cache on, as deployed) whose ``FAQ_RATE_LIMITS`` gives
PRO its real ``billing.plans.REQUESTS_PER_MINUTE`` and leaves the other plans (the quiet orgs
are ENTERPRISE) out of reach. The limiter's window is fixed (60 s), so a short run never
reaches the limit by pacing alone: the noisy client is paced at exactly the plan's rate
(open loop, ``rate / 60`` requests per second on a fixed schedule, at most ``NOISY_INFLIGHT``
in flight), which is the most the org can sustain minute after minute.

Load: the quiet readers are wrk from 127.0.0.1 (``QUIET_CONNECTIONS`` connections, each
org's ``GET /questions?limit=20`` and ``GET /questions/{slug}``), bounded by ``--seconds``.
The noisy client is an asyncio + aiohttp client in a thread of this process (wrk cannot pace
at a fixed rate), to 127.0.0.1 only, for ``--seconds`` + 2 s: it starts a second before the
quiet run and ends a second after it. Its mix, in turn: ``POST /questions`` (a unique
title), ``GET /questions?q=<one letter>`` (a random letter) and ``POST /questions/reorder``
(``REORDER_IDS`` real ids, fetched first, rotated by one each time so every order changes).

A second row (issue 26): an anonymous help-center flood against one org (``FLOOD_ORG``, its
help center on): searches with a new ``q`` each time (each would be a full-text query and an
analytics record), paced at ``FLOOD_PER_MINUTE`` from ``FLOOD_ADDRESSES`` client addresses
behind a trusted proxy (the server trusts 127.0.0.1, ``FAQ_TRUSTED_PROXIES``, and each request
names its client in ``X-Forwarded-For``). It starts ``FLOOD_LEAD_SECONDS`` before the quiet
readers' run: its onset (each budget's burst, ``FAQ_HC_BURST_SECONDS`` worth, at once) is
over by then, and the figure is the flood's steady state. The help-center limits are their
defaults (``FAQ_HC_*``, set explicitly: the bench world may lift them for other rows).
Beside it, the quiet readers of other orgs, two wrk processes at once: the API reads above
and help-center pages (home and a question) of ``HC_QUIET_ORGS`` orgs, each request from one
of a few hundred addresses (so no quiet reader nears a limit); their p99 beside the flood
against the same readers without it, same run. ``--no-hc-limits`` (standalone) serves with
every help-center limit off: the same flood as it was before the limits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import threading
import time
import urllib.request
from abc import ABC, abstractmethod
from collections import Counter
from pathlib import Path
from typing import Any

from bench import load, seed
from bench.http import ok
from bench.services import World
from bench.standalone import in_world, report

QUIET_ORGS = 20
QUIET_CONNECTIONS = 10
QUESTIONS_PER_QUIET_ORG = 25  # bench.seed's slugs: how-do-i-reset-my-password-1..25
NOISY_ORG = "bench-noisy"
NOISY_PLAN = "PRO"
NOISY_QUESTIONS = 40
REORDER_IDS = 20
NOISY_INFLIGHT = 32  # bounded: past it the noisy client waits (its achieved rate says so)
TARGET_RATIO = 1.5
LETTERS = "abcdefghijklmnopqrstuvwxyz"
OUT_OF_REACH = 100_000_000
# The help-center flood (second row).
FLOOD_ORG = "bench-hc-flooded"
FLOOD_PER_MINUTE = 6_000  # 100 req/s: 10x the org's search budget, 25x each address's
FLOOD_LEAD_SECONDS = 3
FLOOD_ADDRESSES = 8
HC_QUIET_ORGS = 100  # help centers read by the quiet readers (each far from its org's limit)
QUIET_ADDRESSES_PER_PAGE = 2  # per org and page: 400 distinct quiet readers in all
HC_LIMIT_SETTINGS = (
    "faq_hc_pages_per_address_per_minute",
    "faq_hc_searches_per_address_per_minute",
    "faq_hc_pages_per_org_per_minute",
    "faq_hc_searches_per_org_per_minute",
)
WORDS = ("password", "invoice", "refund", "login", "export", "billing", "token", "reset")


def plan_rate() -> int:
    """The noisy plan's real requests per minute (``billing.plans``, no override)."""
    from billing.plans import Plan, requests_per_minute

    return requests_per_minute(Plan(NOISY_PLAN))


def rate_limits_env() -> dict[str, str]:
    """``FAQ_RATE_LIMITS`` with the noisy plan at its real limit, every other out of reach."""
    from billing.plans import Plan

    limits = {p.value: OUT_OF_REACH for p in Plan} | {NOISY_PLAN: plan_rate()}
    return {"FAQ_RATE_LIMITS": ",".join(f"{k}={v}" for k, v in limits.items())}


def server_env(*, hc_limits: bool = True) -> dict[str, str]:
    """The row's server: ``rate_limits_env``, 127.0.0.1 a trusted proxy, and the help-center
    limits at their defaults (``hc_limits``) or off."""
    from tenancy.settings import Settings

    limits = {
        name.upper(): str(Settings.model_fields[name].default if hc_limits else 0)
        for name in HC_LIMIT_SETTINGS
    }
    burst = str(Settings.model_fields["faq_hc_burst_seconds"].default)
    return {
        **rate_limits_env(),
        "FAQ_TRUSTED_PROXIES": "127.0.0.1/32",
        **limits,
        "FAQ_HC_BURST_SECONDS": burst,
    }


def _quiet_address(n: int) -> str:
    return f"198.51.{n // 250}.{n % 250 + 1}"


def _quiet_hc_pages(records: list[dict[str, Any]]) -> list[str]:
    """Help-center pages of other orgs: each one's home and a question."""
    pages = []
    for n, r in enumerate(records):
        single = f"how-do-i-reset-my-password-{n % QUESTIONS_PER_QUIET_ORG + 1}"
        pages += [f"/hc/{r['slug']}/en", f"/hc/{r['slug']}/en/questions/{single}"]
    return pages


def _quiet_hc_script(records: list[dict[str, Any]]) -> str:
    """The quiet help-center pages, each from ``QUIET_ADDRESSES_PER_PAGE`` client addresses."""
    reqs: list[tuple[str, str, dict[str, str], str | None]] = []
    for path in _quiet_hc_pages(records):
        for _ in range(QUIET_ADDRESSES_PER_PAGE):
            headers = {"X-Forwarded-For": _quiet_address(len(reqs))}
            reqs.append(("GET", path, headers, None))
    return load.request_list_script(reqs)


def _build_pages(base: str, paths: list[str]) -> None:
    """Each page once (built and cached before anything is measured)."""
    for n, path in enumerate(paths):
        request = urllib.request.Request(
            base + path, headers={"X-Forwarded-For": _quiet_address(10_000 + n)}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()


def enable_help_centers(base: str, records: list[dict[str, Any]]) -> None:
    body = {"helpCenter": {"enabled": True}}
    for r in records:
        ok(base, "PATCH", f"/api/v1/{r['slug']}/settings", r["key"], body)


def _quiet_script(records: list[dict[str, Any]]) -> str:
    reqs: list[tuple[str, str, dict[str, str], str | None]] = []
    for n, r in enumerate(records):
        headers = {"Authorization": f"Bearer {r['key']}"}
        single = f"how-do-i-reset-my-password-{n % QUESTIONS_PER_QUIET_ORG + 1}"
        reqs.append(("GET", f"/api/v1/{r['slug']}/questions?limit=20", headers, None))
        reqs.append(("GET", f"/api/v1/{r['slug']}/questions/{single}", headers, None))
    return load.request_list_script(reqs)


def create_noisy_org(world: Any, base: str) -> dict[str, Any]:
    """The noisy org (PRO, through ``faq orgs create``), a read/write key, its default
    category and ``NOISY_QUESTIONS`` questions created through the API."""
    org = json.loads(world.run("orgs", "create", NOISY_ORG, "--plan", NOISY_PLAN, "--json").stdout)
    issued = json.loads(
        world.run("keys", "create", NOISY_ORG, "--scopes", "read,write", "--json").stdout
    )
    key = issued["key"]
    cats = ok(base, "GET", f"/api/v1/{NOISY_ORG}/categories", key)
    category_id = cats["data"][0]["id"]
    for n in range(NOISY_QUESTIONS):
        ok(base, "POST", f"/api/v1/{NOISY_ORG}/questions", key, _question(category_id, f"s{n}"))
    listed = ok(base, "GET", f"/api/v1/{NOISY_ORG}/questions?limit={REORDER_IDS}", key)
    ids = [q["id"] for q in listed["data"]]
    if len(ids) < 2:
        raise RuntimeError("the noisy org has no questions to reorder")
    return {"slug": NOISY_ORG, "plan": org["plan"], "key": key, "category": category_id, "ids": ids}


def _question(category_id: str, tag: str) -> dict[str, Any]:
    return {
        "title": f"How do I keep a noisy neighbour quiet, take {tag}?",
        "answer": seed.ANSWER,
        "categoryId": category_id,
        "status": "published",
    }


class PacedClient(ABC):
    """Open-loop, paced at ``per_minute / 60`` requests a second for ``seconds``; counts
    statuses and latencies per kind. ``_next(n)``: the n-th request, ``(kind, method, path,
    JSON body or None, headers)``."""

    def __init__(self, base: str, per_minute: int, seconds: float, headers: dict[str, str]):
        self.base = base
        self.headers = headers
        self.rate = per_minute / 60
        self.seconds = seconds
        self.statuses: dict[str, Counter[int]] = {}
        self.latencies: dict[str, list[float]] = {}
        self.errors = 0
        self.sent = 0
        self.scheduled = 0
        self.sending = 0.0  # seconds the schedule ran (the rate is sent / sending)
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="noisy-client", daemon=True)
        self._thread.start()

    def join(self) -> None:
        assert self._thread is not None
        self._thread.join(self.seconds + 60)
        if self._thread.is_alive():
            raise RuntimeError("the noisy client did not stop")
        if self._failure is not None:
            raise self._failure

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported by join()
            self._failure = exc

    @abstractmethod
    def _next(self, n: int) -> tuple[str, str, str, Any, dict[str, str]]:
        """The n-th request: (kind, method, path, JSON body or None, headers)."""

    async def _main(self) -> None:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=10)
        connector = aiohttp.TCPConnector(limit=NOISY_INFLIGHT)
        slots = asyncio.Semaphore(NOISY_INFLIGHT)
        tasks: set[asyncio.Task[None]] = set()
        async with aiohttp.ClientSession(
            self.base, headers=self.headers, timeout=timeout, connector=connector
        ) as session:

            async def one(
                kind: str, method: str, path: str, body: Any, headers: dict[str, str]
            ) -> None:
                started = time.perf_counter()
                try:
                    async with session.request(method, path, json=body, headers=headers) as resp:
                        await resp.read()
                        self.statuses.setdefault(kind, Counter())[resp.status] += 1
                except (aiohttp.ClientError, TimeoutError):
                    self.errors += 1
                finally:
                    self.latencies.setdefault(kind, []).append(time.perf_counter() - started)
                    slots.release()

            loop = asyncio.get_running_loop()
            t0 = loop.time()
            deadline = t0 + self.seconds
            while (now := loop.time()) < deadline:
                due = int((now - t0) * self.rate) + 1
                while self.sent < due:
                    try:  # bounded: waits while NOISY_INFLIGHT are out, never past the end
                        await asyncio.wait_for(slots.acquire(), max(0.0, deadline - loop.time()))
                    except TimeoutError:
                        break
                    task = asyncio.create_task(one(*self._next(self.sent)))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                    self.sent += 1
                await asyncio.sleep(0.002)
            self.sending = min(loop.time(), deadline) - t0
            self.scheduled = int(self.sending * self.rate)
            if tasks:  # the last ones finish (each is bounded by the client's 10 s timeout)
                await asyncio.wait(tasks, timeout=15)

    def as_json(self) -> dict[str, Any]:
        every = [x for values in self.latencies.values() for x in values]
        return {
            "target_rps": round(self.rate, 1),
            "rps": round(self.sent / self.sending, 1) if self.sending else 0.0,
            "scheduled": self.scheduled,
            "requests": self.sent,
            "p99_ms": _p99_ms(every),
            "p99_ms_by_kind": {k: _p99_ms(v) for k, v in sorted(self.latencies.items())},
            "client_errors": self.errors,
            "statuses": {k: dict(sorted(v.items())) for k, v in sorted(self.statuses.items())},
        }


class NoisyClient(PacedClient):
    """The noisy org's mix: create, search by one letter, reorder, in turn."""

    def __init__(self, base: str, noisy: dict[str, Any], per_minute: int, seconds: float):
        super().__init__(base, per_minute, seconds, {"Authorization": f"Bearer {noisy['key']}"})
        self.noisy = noisy
        self._ids = list(noisy["ids"])

    def _next(self, n: int) -> tuple[str, str, str, Any, dict[str, str]]:
        slug = self.noisy["slug"]
        kind = ("create", "search", "reorder")[n % 3]
        if kind == "create":
            body = _question(self.noisy["category"], f"{time.monotonic_ns()}-{n}")
            return kind, "POST", f"/api/v1/{slug}/questions", body, {}
        if kind == "search":
            return kind, "GET", f"/api/v1/{slug}/questions?q={random.choice(LETTERS)}", None, {}
        self._ids = self._ids[1:] + self._ids[:1]
        return kind, "POST", f"/api/v1/{slug}/questions/reorder", {"ids": list(self._ids)}, {}


class HelpCenterFlood(PacedClient):
    """Anonymous searches of one org's help center, a new ``q`` each time, from
    ``FLOOD_ADDRESSES`` clients (``X-Forwarded-For``) in turn."""

    def __init__(self, base: str, slug: str, per_minute: int, seconds: float):
        super().__init__(base, per_minute, seconds, {})
        self.slug = slug

    def _next(self, n: int) -> tuple[str, str, str, Any, dict[str, str]]:
        q = f"{random.choice(WORDS)} {n}"
        headers = {"X-Forwarded-For": f"203.0.113.{n % FLOOD_ADDRESSES + 1}"}
        return "search", "GET", f"/hc/{self.slug}/en/search?q={q.replace(' ', '+')}", None, headers


def _p99_ms(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000, 2)


def measure(
    base: str, records: list[dict[str, Any]], noisy: dict[str, Any], seconds: float
) -> dict[str, Any]:
    """The quiet readers alone, then the same run with the noisy org at its plan's rate (it
    starts a second before the readers and ends a second after them)."""
    script = _quiet_script(records)
    load.run_wrk(base, script, seconds=1, connections=QUIET_CONNECTIONS)  # warm
    alone = load.run_wrk(base, script, seconds=seconds, connections=QUIET_CONNECTIONS)
    per_minute = plan_rate()
    client = NoisyClient(base, noisy, per_minute, seconds + 2)
    client.start()
    time.sleep(1)
    beside = load.run_wrk(base, script, seconds=seconds, connections=QUIET_CONNECTIONS)
    client.join()
    return {
        "alone": alone.as_json(),
        "noisy_beside": beside.as_json(),
        "noisy": {"plan": NOISY_PLAN, "per_minute": per_minute, **client.as_json()},
    }


def _quiet_pair(base: str, scripts: dict[str, str], seconds: float) -> dict[str, Any]:
    """The quiet readers' wrk runs (API, help center) at the same time, half the
    connections each."""
    results: dict[str, Any] = {}

    def run(name: str) -> None:
        results[name] = load.run_wrk(
            base, scripts[name], seconds=seconds, connections=QUIET_CONNECTIONS // 2
        ).as_json()

    threads = [threading.Thread(target=run, args=(name,)) for name in scripts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 90)
    if set(results) != set(scripts):
        raise RuntimeError("a quiet wrk run did not finish")
    return results


def create_flooded_org(world: Any, base: str) -> str:
    (record,) = seed.create_orgs(
        [FLOOD_ORG],
        out_dir=world.tmp / "orgs",
        processes=1,
        questions_each=QUESTIONS_PER_QUIET_ORG,
    )
    enable_help_centers(base, [record])
    return FLOOD_ORG


def measure_hc_flood(
    base: str,
    api_records: list[dict[str, Any]],
    hc_records: list[dict[str, Any]],
    flooded: str,
    seconds: float,
) -> dict[str, Any]:
    """The quiet readers (API and help center) alone, then beside the help-center flood (it
    starts ``FLOOD_LEAD_SECONDS`` before them and ends a second after)."""
    enable_help_centers(base, hc_records)
    _build_pages(base, _quiet_hc_pages(hc_records))
    scripts = {"api": _quiet_script(api_records), "hc": _quiet_hc_script(hc_records)}
    _quiet_pair(base, scripts, 1)  # warm
    alone = _quiet_pair(base, scripts, seconds)
    flood = HelpCenterFlood(base, flooded, FLOOD_PER_MINUTE, seconds + FLOOD_LEAD_SECONDS + 1)
    flood.start()
    time.sleep(FLOOD_LEAD_SECONDS)
    beside = _quiet_pair(base, scripts, seconds)
    flood.join()
    return {
        "alone": alone,
        "flood_beside": beside,
        "flood": {"per_minute": FLOOD_PER_MINUTE, "addresses": FLOOD_ADDRESSES, **flood.as_json()},
    }


def hc_flood_rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    alone, beside, flood = found["alone"], found["flood_beside"], found["flood"]
    statuses = flood["statuses"].get("search", {})
    refused = sum(v for k, v in statuses.items() if int(k) == 429)
    entries = []
    for name, what in (("hc", "help-center pages"), ("api", "API reads")):
        ratio = beside[name]["p99_ms"] / alone[name]["p99_ms"] if alone[name]["p99_ms"] else None
        entries.append(
            {
                "name": f"quiet {what} p99 beside a help-center flood",
                "measured_as": (
                    f"other orgs' {what}, {QUIET_CONNECTIONS // 2} conns (beside the "
                    f"{'API reads' if name == 'hc' else 'help-center pages'}), while "
                    f"{flood['addresses']} addresses search one help center with a new q each "
                    f"time at {flood['rps']:.0f} req/s ({refused} of {flood['requests']} "
                    f"refused 429; measured from {FLOOD_LEAD_SECONDS} s in); ref: no flood"
                ),
                "figure": beside[name]["p99_ms"],
                "reference": alone[name]["p99_ms"],
                "unit": "ms",
                "target": f"<= {TARGET_RATIO}x alone",
                "met": ratio is not None and ratio <= TARGET_RATIO and not beside[name]["errors"],
                "runs": found if name == "hc" else None,
            }
        )
    return entries


def rows(found: dict[str, Any]) -> list[dict[str, Any]]:
    alone, beside, noisy = found["alone"], found["noisy_beside"], found["noisy"]
    ratio = beside["p99_ms"] / alone["p99_ms"] if alone["p99_ms"] else None
    return [
        {
            "name": f"quiet p99 beside a noisy org ({QUIET_ORGS} orgs)",
            "measured_as": (
                f"GET list/single, {QUIET_CONNECTIONS} conns, while a {noisy['plan']} org mixes "
                f"create/q=letter/reorder at {noisy['per_minute']}/min "
                f"({noisy['rps']:.0f} req/s sent); ref: no noisy org"
            ),
            "figure": beside["p99_ms"],
            "reference": alone["p99_ms"],
            "unit": "ms",
            "target": f"<= {TARGET_RATIO}x alone",
            "met": ratio is not None and ratio <= TARGET_RATIO and not beside["errors"],
            "runs": found,
        }
    ]


def noisy_rows(bench: Any) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: ``for entry in noisy_rows(self): self.row(**entry)``.
    Creates the noisy org in the bench's world, serves a server of its own with the noisy
    plan's real rate limit, and uses twenty of the bench's orgs (``bench.all_orgs``) as the
    quiet ones."""
    records = bench.all_orgs[1 : QUIET_ORGS + 1]
    hc_records = bench.all_orgs[1 : HC_QUIET_ORGS + 1]
    server = bench.world.serve(server_env())
    try:
        noisy = create_noisy_org(bench.world, server.base)
        found = measure(server.base, records, noisy, bench.seconds)
        flooded = create_flooded_org(bench.world, server.base)
        flood = measure_hc_flood(server.base, records, hc_records, flooded, bench.seconds)
    finally:
        server.stop()
    return rows(found) + hc_flood_rows(flood)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.noisy")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--only", choices=("noisy", "hc-flood"), default=None)
    parser.add_argument(
        "--no-hc-limits", action="store_true", help="help-center limits off (the flood before)"
    )
    args = parser.parse_args(argv)

    def work(world: World) -> dict[str, Any]:
        records = seed.create_orgs(
            [f"bench-quiet-{n:03d}" for n in range(max(QUIET_ORGS, HC_QUIET_ORGS))],
            out_dir=world.tmp / "orgs",
            processes=2,
            questions_each=QUESTIONS_PER_QUIET_ORG,
        )
        records.sort(key=lambda r: str(r["slug"]))
        server = world.serve(server_env(hc_limits=not args.no_hc_limits))
        found: dict[str, Any] = {}
        if args.only != "hc-flood":
            noisy = create_noisy_org(world, server.base)
            found["noisy"] = measure(server.base, records[:QUIET_ORGS], noisy, args.seconds)
        if args.only != "noisy":
            flooded = create_flooded_org(world, server.base)
            found["hc_flood"] = measure_hc_flood(
                server.base, records[:QUIET_ORGS], records[:HC_QUIET_ORGS], flooded, args.seconds
            )
        return found

    found = in_world(work)
    entries = rows(found["noisy"]) if "noisy" in found else []
    entries += hc_flood_rows(found["hc_flood"]) if "hc_flood" in found else []
    return report(entries, found, width=56)


if __name__ == "__main__":
    ROOT = Path(__file__).resolve().parent.parent
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
