"""Issue 14's hot-path rows: each against the bare reference route serving the same bytes
(``bench.reference``), in the same run, wrk with ``load.CONNECTIONS`` connections, bounded,
with the CPU seconds per 1,000 service requests of each process group (API, worker,
PostgreSQL, Redis: process trees read from /proc, ``bench/cpu.py``) next to each row.

- list / single read / single read over 1,000 slugs, cache on; list / single read, cache off;
- ``POST questions`` in an org without webhooks, and in the main org with 3 webhooks to a local
  TLS keep-alive receiver while one ``faq worker`` delivers meanwhile;
- the write floor (``bench/write_floor.py``: Quart + SQLAlchemy + PostgreSQL and nothing else,
  writing the same body with 1 and with 5 statements), info rows beside the create;
- 90% GET over 1,000 slugs / 10% POST (main org, its 3 webhooks live);
- the cached list and single read with the API as two ``faq serve`` processes sharing the port
  (info rows: ``faq serve`` has no workers option; each process binds its own SO_REUSEPORT
  socket, handed over as ``--bind fd://N``, and the kernel spreads connections over them).

``hot_path_rows(bench)`` returns the rows (``Bench.row(**entry)``); it starts what it needs (a
worker, a receiver, a second org, the two-process API) and stops it at the end.

    .venv/bin/python -m bench.hot_paths --quick [--questions 2000] [--seconds 3]
        [--only reads-off,create]

runs these rows and the delivery rows (``bench/delivery_rate.py``) in a world of their own;
``--only`` runs just the named groups (``ONLY``: the three cache-on reads, the two cache-off
reads, the create without webhooks, the 90/10 mix) and no delivery rows.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import load, seed
from bench.cpu import Meter, describe, per_thousand, postmaster_pid, py_spy
from bench.http import ok
from bench.services import BIN, ROOT, Server, stop_process
from tenancy.embedded import free_port

NO_HOOKS_ORG = "bench-hot-nohooks"
REVIEW_ORG = "bench-hot-review"
SLUGS = 1000
WEBHOOKS = 3


def _profile(pids: list[int], seconds: float) -> subprocess.Popen[bytes] | None:
    """With ``HOT_PATHS_PROFILE=folder``, py-spy records the API's first process during the
    service's run (one file of raw stacks per row)."""
    folder = os.environ.get("HOT_PATHS_PROFILE")
    if not folder:
        return None
    Path(folder).mkdir(parents=True, exist_ok=True)
    return py_spy(pids[0], Path(folder) / f"api-{int(time.time())}.stacks", seconds)


class HotPaths:
    def __init__(self, bench: Any) -> None:
        self.bench = bench
        self.world = bench.world
        self.slug = bench.main["slug"]
        self.key = bench.main["key"]
        self.auth = {"Authorization": f"Bearer {self.key}"}
        self.base_pids = {
            "postgres": [postmaster_pid(self.world.pg.data_dir / "pgdata")],
            "redis": [self.world.redis.process.pid],
        }
        self.worker: Any = None
        self.receiver: Any = None
        self.started: list[Any] = []
        self.hooks: list[str] = []
        self.rows: list[dict[str, Any]] = []
        self.warm_requests = 0

    # ---- measuring ---------------------------------------------------------------------

    def meter(self, api: list[int]) -> Meter:
        groups = {"api": api}
        if self.worker is not None:
            groups["worker"] = [self.worker.pid]
        return Meter({**groups, **self.base_pids})

    def pair(
        self, ref_script: str, base: str, api: list[int], svc_script: str
    ) -> tuple[load.LoadResult, load.LoadResult, dict[str, float]]:
        """Reference then service, back to back, each after a warm-up; the service's run
        sampled for CPU."""
        b = self.bench
        ref_base = b.reference.base
        load.run_wrk(ref_base, ref_script, seconds=b.warmup)
        ref = load.run_wrk(ref_base, ref_script, seconds=b.seconds)
        self.warm_requests = load.run_wrk(base, svc_script, seconds=b.warmup).requests
        meter = self.meter(api)
        spy = _profile(api, b.seconds)
        before = meter.sample()
        svc = load.run_wrk(base, svc_script, seconds=b.seconds)
        if spy is not None:
            spy.wait(timeout=60)
        cpu = per_thousand(before, meter.sample(), svc.requests)
        if ref.errors or svc.errors:
            raise RuntimeError(f"errors under load: reference {ref.errors}, service {svc.errors}")
        return ref, svc, cpu

    def add(
        self,
        name: str,
        measured_as: str,
        ref: load.LoadResult,
        svc: load.LoadResult,
        cpu: dict[str, float],
        target: float | None,
        **extra: Any,
    ) -> None:
        ratio = svc.rps / ref.rps
        self.rows.append(
            {
                "name": name,
                "measured_as": f"{measured_as}; {describe(cpu)}",
                "figure": svc.rps,
                "reference": ref.rps,
                "unit": "req/s",
                "target": "info" if target is None else f">= {target}",
                "met": None if target is None else ratio >= target,
                "cpu_s_per_1k": cpu,
                "service": svc.as_json(),
                "bare": ref.as_json(),
                **extra,
            }
        )

    # ---- scripts -----------------------------------------------------------------------

    def get(self, paths: list[str]) -> str:
        return load.request_list_script([("GET", p, self.auth, None) for p in paths])

    def ref_get(self, name: str) -> str:
        return load.request_list_script([("GET", f"/r/{name}", {}, None)])

    def post(self, org: str, key: str, category_id: str) -> str:
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        return load.unique_post_script(
            f"/api/v1/{org}/questions", headers, self.template(category_id)
        )

    def template(self, category_id: str) -> str:
        return json.dumps({**self.bench.question_body("@N@"), "categoryId": category_id})

    def ref_post(self) -> str:
        headers = {"Content-Type": "application/json"}
        return load.unique_post_script("/r/write", headers, self.template("c"))

    # ---- set-up ------------------------------------------------------------------------

    def slugs(self) -> list[str]:
        schema = self.bench.main["schema"]
        return str(
            self.world.psql(
                f"SELECT slug FROM \"{schema}\".questions WHERE status = 'published' "
                f"ORDER BY sort_order, slug LIMIT {SLUGS}"
            )
        ).split()

    def serve_two(self) -> tuple[Server, list[int]]:
        """Two ``faq serve`` processes on one port: each its own SO_REUSEPORT socket."""
        port = free_port()
        procs = []
        for n in range(2):
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind(("127.0.0.1", port))
            fd = sock.fileno()
            with (self.world.tmp / f"serve2-{port}-{n}.log").open("ab") as out:
                proc = subprocess.Popen(
                    [str(BIN / "faq"), "serve", "--bind", f"fd://{fd}"],
                    env=self.world.env,
                    cwd=ROOT,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    pass_fds=(fd,),
                )
            sock.close()  # the child holds its copy
            self.world.children.append(proc)
            self.started.append(proc)
            procs.append(proc)
        for proc in procs:
            Server(port, proc).wait_ready("/readyz")
        return Server(port, procs[0]), [p.pid for p in procs]

    def start_deliveries(self) -> None:
        from bench.delivery_rate import CountingReceiver, spawn_worker

        # Webhooks left on the main org (the write row's, pointing nowhere) would be
        # delivered to as well: the rows are about exactly 3 live ones. Removed before the
        # worker starts, so it never tries them.
        path = f"/api/v1/{self.slug}/webhooks"
        for hook in ok(self.bench.base, "GET", path, self.key)["data"]:
            ok(self.bench.base, "DELETE", f"{path}/{hook['id']}", self.key)
        self.receiver = CountingReceiver(self.world.tmp).start()
        for n in range(WEBHOOKS):
            body = {"url": self.receiver.url(f"hot-{n}"), "events": ["question.created"]}
            self.hooks.append(ok(self.bench.base, "POST", path, self.key, body)["data"]["id"])
        self.worker = spawn_worker(self.world, self.receiver)
        self.started.append(self.worker)
        self.settle(60.0)

    def settle(self, timeout: float) -> None:
        """Wait (bounded) until the worker is idle (under 5% of a core for a second): its
        start-up and any backlog left by earlier rows are not charged to the next row."""
        meter = Meter({"worker": [self.worker.pid]})
        deadline = time.monotonic() + timeout
        last = meter.sample()["worker"]
        while time.monotonic() < deadline:
            time.sleep(1.0)
            now = meter.sample()["worker"]
            if now - last < 0.05:
                return
            last = now

    def drain(self, expected: int, timeout: float) -> int:
        """Wait (bounded) until the receiver has ``expected`` deliveries; returns the count."""
        deadline = time.monotonic() + timeout
        while len(self.receiver.ids) < expected and time.monotonic() < deadline:
            time.sleep(0.1)
        return len(self.receiver.ids)

    def stop(self) -> None:
        path = f"/api/v1/{self.slug}/webhooks"
        for hook in self.hooks:
            try:
                ok(self.bench.base, "DELETE", f"{path}/{hook}", self.key)
            except Exception as exc:  # cleanup must not hide the rows
                print(f"hot paths: deleting webhook {hook}: {exc}", flush=True)
        for proc in self.started:
            stop_process(proc)

    # ---- rows --------------------------------------------------------------------------

    def measure(
        self,
        name: str,
        measured_as: str,
        target: float | None,
        ref_script: str,
        base: str,
        api: list[int],
        svc_script: str,
    ) -> tuple[load.LoadResult, load.LoadResult] | None:
        """One row; a failure becomes a row saying so (the other rows still run)."""
        try:
            ref, svc, cpu = self.pair(ref_script, base, api, svc_script)
        except Exception as exc:
            self.failed(name, measured_as, target, exc)
            return None
        self.add(name, measured_as, ref, svc, cpu, target)
        return ref, svc

    def failed(self, name: str, measured_as: str, target: float | None, exc: Exception) -> None:
        self.rows.append(
            {
                "name": name,
                "measured_as": f"{measured_as}; FAILED: {type(exc).__name__}: {exc}",
                "figure": None,
                "reference": None,
                "unit": "req/s",
                "target": "info" if target is None else f">= {target}",
                "met": None if target is None else False,
                "error": f"{type(exc).__name__}: {exc}",
            }
        )

    def reads(self) -> None:
        self.reads_cached()
        self.reads_uncached()
        self.reads_two_processes()

    def reads_cached(self) -> None:
        """The three cache-on rows (``--only reads-on``)."""
        b = self.bench
        listing = [f"/api/v1/{self.slug}/questions?limit=20"]
        one = [f"/api/v1/{self.slug}/questions/{b.read_slug}"]
        many = [f"/api/v1/{self.slug}/questions/{s}" for s in self.slugs()]
        on = ([b.service.proc.pid], b.base)
        ref_list, ref_read = self.ref_get("list"), self.ref_get("read")
        self.measure(
            "hot: list, cache on", "GET questions?limit=20", 0.6,
            ref_list, on[1], on[0], self.get(listing),
        )  # fmt: skip
        self.measure(
            "hot: read, cache on", "GET questions/{slug}", 0.6,
            ref_read, on[1], on[0], self.get(one),
        )  # fmt: skip
        self.warm(many)
        self.measure(
            f"hot: read {len(many)} slugs, cache on",
            f"GET questions/{{slug}} over {len(many)} slugs", 0.55,
            ref_read, on[1], on[0], self.get(many),
        )  # fmt: skip

    def warm(self, paths: list[str]) -> None:
        """A full pass over ``paths`` first, so the measured run reads from the cache: a short
        probe gives the cold rate, then a run long enough for 1.2 passes (bounded), as the
        flatness row does (a fixed short warm-up left most slugs cold)."""
        b = self.bench
        probe = load.run_wrk(b.base, self.get(paths), seconds=max(b.warmup, 1.0))
        one_pass = 1.2 * len(paths) / max(probe.rps, 1.0)
        cap = 60.0 if b.quick else 300.0
        load.run_wrk(b.base, self.get(paths), seconds=min(cap, max(b.warmup, one_pass)))

    def reads_two_processes(self) -> None:
        """The info rows of the cached list and read with two API processes."""
        listing = [f"/api/v1/{self.slug}/questions?limit=20"]
        one = [f"/api/v1/{self.slug}/questions/{self.bench.read_slug}"]
        ref_list, ref_read = self.ref_get("list"), self.ref_get("read")
        how = "2 faq serve processes, SO_REUSEPORT, one port; ref: bare, 1 process"
        try:
            two, pids = self.serve_two()
        except Exception as exc:
            self.failed("hot: 2 API procs", how, None, exc)
            return
        try:
            self.measure(
                "hot: list, cache on, 2 API procs", how, None,
                ref_list, two.base, pids, self.get(listing),
            )  # fmt: skip
            self.measure(
                "hot: read, cache on, 2 API procs", how, None,
                ref_read, two.base, pids, self.get(one),
            )  # fmt: skip
        finally:
            for proc in self.started:
                stop_process(proc)
            self.started.clear()

    def reads_uncached(self) -> None:
        """Only the two cache-off rows (``--only reads-off``)."""
        b = self.bench
        listing = [f"/api/v1/{self.slug}/questions?limit=20"]
        one = [f"/api/v1/{self.slug}/questions/{b.read_slug}"]
        off = ([b.uncached.proc.pid], b.uncached.base)
        self.measure(
            "hot: list, cache off", "FAQ_RESPONSE_CACHE_MB=0", 0.35,
            self.ref_get("list"), off[1], off[0], self.get(listing),
        )  # fmt: skip
        self.measure(
            "hot: read, cache off", "FAQ_RESPONSE_CACHE_MB=0", 0.45,
            self.ref_get("read"), off[1], off[0], self.get(one),
        )  # fmt: skip

    def create_without_webhooks(self) -> None:
        """The create row of an org without webhooks (``--only create``), then the write
        floor's rows beside it (``write_floor``)."""
        b = self.bench
        (org,) = seed.create_orgs(
            [NO_HOOKS_ORG],
            out_dir=self.world.tmp / "orgs",
            processes=1,
            questions_each=self.question_count(),
        )
        cats = ok(b.base, "GET", f"/api/v1/{NO_HOOKS_ORG}/categories", org["key"])
        script = self.post(NO_HOOKS_ORG, org["key"], cats["data"][0]["id"])
        self.start_deliveries()
        self.measure(
            "hot: create, no webhooks", "POST questions, 1 worker up", 0.25,
            self.ref_post(), b.base, [b.service.proc.pid], script,
        )  # fmt: skip
        self.write_floor()

    def write_floor(self) -> None:
        """Info rows: ``bench.write_floor`` (Quart + SQLAlchemy + PostgreSQL, nothing else)
        writing the same body with 1 and with 5 statements, against the same bare route."""
        assert self.world.pg is not None
        port = free_port()
        dsn = f"postgresql+asyncpg://postgres@127.0.0.1:{self.world.pg.port}/postgres"
        proc = self.world.spawn(
            [str(BIN / "python"), "-m", "bench.write_floor", str(port), dsn],
            f"write-floor-{port}.log",
        )
        floor = Server(port, proc)
        floor.wait_ready("/healthz")
        headers = {"Content-Type": "application/json"}
        for statements in (1, 5):
            script = load.unique_post_script(f"/floor/{statements}", headers, self.template("c"))
            self.measure(
                f"hot: write floor, {statements} statement{'s' * (statements > 1)}",
                "bench.write_floor: Quart + SQLAlchemy + PostgreSQL only", None,
                self.ref_post(), floor.base, [proc.pid], script,
            )  # fmt: skip
        stop_process(proc)

    def patch_under_review(self) -> None:
        """Issue 40's cost of a write: ``PATCH`` with ``If-Match: *`` (locked, read and
        compared as any ``If-Match``) of the answers of 1,000 unpublished questions, round
        robin, in an org that requires review, against the bare write route."""
        b = self.bench
        (org,) = seed.create_orgs(
            [REVIEW_ORG], out_dir=self.world.tmp / "orgs", processes=1, questions_each=SLUGS
        )
        schema = org["schema"]
        self.world.psql(
            f"UPDATE \"{schema}\".questions SET status = 'draft', published_at = NULL;"
            f' INSERT INTO "{schema}".workflow_settings (id, require_review, updated_at)'
            " VALUES (true, true, now()) ON CONFLICT (id) DO UPDATE SET require_review = true"
        )
        slugs = str(self.world.psql(f'SELECT slug FROM "{schema}".questions ORDER BY slug')).split()
        headers = {
            "Authorization": f"Bearer {org['key']}",
            "Content-Type": "application/json",
            "If-Match": "*",
        }
        paths = [f"/api/v1/{REVIEW_ORG}/questions/{slug}" for slug in slugs]
        script = load.unique_request_list_script(
            "PATCH", paths, headers, json.dumps({"answer": "Answer @N@"})
        )
        self.measure(
            "hot: PATCH with If-Match, review required",
            "PATCH questions/{slug} (1,000 unpublished), If-Match: *",
            None, self.ref_post(), b.base, [b.service.proc.pid], script,
        )  # fmt: skip

    def writes(self) -> None:
        b = self.bench
        api = [b.service.proc.pid]
        self.create_without_webhooks()

        name = "hot: create, 3 webhooks"
        how = "POST questions, 1 worker delivering to a TLS keep-alive receiver"
        start = len(self.receiver.ids)
        try:
            ref, svc, cpu = self.pair(
                self.ref_post(), b.base, api, self.post(self.slug, self.key, b.category_id)
            )
        except Exception as exc:
            self.failed(name, how, 0.10, exc)
        else:
            during = len(self.receiver.ids) - start
            expected = start + WEBHOOKS * (self.warm_requests + svc.requests)
            # Bounded: the next row should not pay for this one's backlog.
            drained = self.drain(expected, 20.0 if b.quick else 120.0) - start
            how += (
                f"; {during} deliveries during the {b.seconds:.0f}s run, "
                f"{drained} after a bounded wait (at least {expected - start} due)"
            )
            self.settle(30.0)
            self.add(
                name, how, ref, svc, cpu, 0.10,
                deliveries_during_run=during,
                deliveries_expected=expected - start,
                deliveries_after_drain=drained,
            )  # fmt: skip

        self.mixed()

    def mixed_alone(self) -> None:
        """Only the 90/10 row (``--only mix``): the main org's 3 webhooks, one worker."""
        self.start_deliveries()
        self.mixed()

    def mixed(self) -> None:
        b = self.bench
        api = [b.service.proc.pid]
        gets = [(f"/api/v1/{self.slug}/questions/{s}", self.auth) for s in self.slugs()]
        # Steady state: the reads of the mix cached, as in the 1,000-slug row (creates bump
        # only the lists' generation; the single reads survive them).
        self.warm([path for path, _ in gets])
        headers = {**self.auth, "Content-Type": "application/json"}
        svc_script = load.mixed_script(
            gets, f"/api/v1/{self.slug}/questions", headers, self.template(b.category_id)
        )
        ref_script = load.mixed_script(
            [("/r/read", {})], "/r/write", {"Content-Type": "application/json"}, self.template("c")
        )
        self.measure(
            "hot: 90% read / 10% create",
            f"GET over {len(gets)} slugs / POST, 3 webhooks, 1 worker", 0.35,
            ref_script, b.base, api, svc_script,
        )  # fmt: skip

    def question_count(self) -> int:
        return int(self.world.psql(f'SELECT count(*) FROM "{self.bench.main["schema"]}".questions'))


ONLY = {
    "reads-on": "reads_cached",
    "reads-off": "reads_uncached",
    "create": "create_without_webhooks",
    "mix": "mixed_alone",
    "patch": "patch_under_review",
}


def hot_path_rows(bench: Any, only: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """For ``bench/__main__.py``: ``("hot", self.rows_of("hot_paths", "hot_path_rows"))``.
    ``only``: just these groups of rows (``ONLY``), in that order."""
    hot = HotPaths(bench)
    try:
        if only:
            for name in only:
                getattr(hot, ONLY[name])()
        else:
            hot.reads()
            hot.writes()
            hot.patch_under_review()
    finally:
        hot.stop()
    return hot.rows


def quick(argv: list[str]) -> int:
    """A bounded run of these rows and the delivery rows in a world of their own."""
    from bench.__main__ import MAIN_ORG, Bench
    from bench.delivery_rate import delivery_rate_rows

    parser = argparse.ArgumentParser(prog="python -m bench.hot_paths")
    parser.add_argument("--quick", action="store_true", help="(the only mode)")
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument(
        "--only",
        default="",
        help=f"comma-separated groups of rows ({', '.join(ONLY)}); no delivery rows",
    )
    args = parser.parse_args(argv)
    only = tuple(name for name in args.only.split(",") if name)
    unknown = [name for name in only if name not in ONLY]
    if unknown:
        parser.error(f"unknown --only groups: {', '.join(unknown)}")
    ns = argparse.Namespace(quick=True, orgs=1, seconds=args.seconds, soak=1, processes=1, only="")
    bench = Bench(ns)
    load.ensure_wrk()
    try:
        bench.world.start()
        bench.world.run("migrate")
        (bench.main,) = seed.create_orgs(
            [MAIN_ORG],
            out_dir=bench.world.tmp / "orgs",
            processes=1,
            questions_each=args.questions,
        )
        bench.all_orgs = [bench.main]
        bench.world.psql("VACUUM ANALYZE")
        bench.service = bench.world.serve()
        bench.base = bench.service.base
        bench.uncached = bench.world.serve({"FAQ_RESPONSE_CACHE_MB": "0"})
        bench.auth = {"Authorization": f"Bearer {bench.main['key']}"}
        cats = ok(bench.base, "GET", f"/api/v1/{MAIN_ORG}/categories", bench.main["key"])
        bench.category_id = cats["data"][0]["id"]
        bench.start_reference()
        entries = hot_path_rows(bench, only)
        try:
            if not only:
                entries += delivery_rate_rows(bench)
        except Exception as exc:  # the hot rows are worth printing anyway
            print(f"delivery rows failed: {type(exc).__name__}: {exc}", flush=True)
    finally:
        bench.world.stop()
    print(f"\n{args.questions} questions, {args.seconds:g}s runs, {load.CONNECTIONS} connections")
    for entry in entries:
        bench.row(**entry)
    print()
    for entry in entries:
        print(f"{entry['name']:<36} {entry['measured_as']}")
    return 0


if __name__ == "__main__":
    if str(Path(__file__).resolve().parent.parent) not in sys.path:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(quick(sys.argv[1:]))
