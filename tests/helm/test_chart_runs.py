"""Run what the chart tells Kubernetes to run, on this machine.

The container commands and environment come from the rendered manifests (the image's entry
point mapped to .venv/bin/faq, the image's ENV from the Dockerfile), pointed at a fresh
database on the embedded PostgreSQL and a spare database of the embedded Redis that the test
session started. Then the migration hook runs, the API, worker and scheduler start, a real
authenticated request is served, and SIGTERM stops everything within the grace periods.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
import redis
from cryptography.fernet import Fernet

from tenancy.embedded import free_port
from tests.helm.dockerfile import final_stage
from tests.helm.rendering import (
    REPO,
    Manifest,
    find,
    merged,
    only_container,
    pod_spec,
    production_values,
    render,
)

IMAGE_VENV_BIN = "/opt/venv/bin"
LOCAL_VENV_BIN = str(REPO / ".venv" / "bin")
SCHEDULER_LOCK = "faq:scheduler:lock"


@dataclass
class Running:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


async def create_database(admin_url: str, database: str) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'CREATE DATABASE "{database}"')
    finally:
        await conn.close()


async def drop_database(admin_url: str, database: str) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    finally:
        await conn.close()


def image_environment() -> dict[str, str]:
    """The image's ENV, with its virtualenv mapped to this checkout's."""
    env = final_stage().env()
    env["PATH"] = (
        env["PATH"]
        .replace("$PATH", "/usr/local/bin:/usr/bin:/bin")
        .replace(IMAGE_VENV_BIN, LOCAL_VENV_BIN)
    )
    return env


def container_environment(manifests: list[Manifest], container: dict[str, Any]) -> dict[str, str]:
    """What the kubelet would put in the container's environment (env wins over envFrom)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(find(manifests, "ConfigMap", source["configMapRef"]["name"])["data"])
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = entry["value"]
            continue
        ref = entry["valueFrom"]["secretKeyRef"]
        data = find(manifests, "Secret", ref["name"])["data"]
        if ref["key"] not in data:
            assert ref.get("optional") is True, f"{entry['name']}: missing key {ref['key']}"
            continue
        env[entry["name"]] = base64.b64decode(data[ref["key"]]).decode()
    return env


def command_line(container: dict[str, Any]) -> list[str]:
    entrypoint = container.get("command") or final_stage().exec_form("ENTRYPOINT")
    assert entrypoint == [f"{IMAGE_VENV_BIN}/faq"]
    return [f"{LOCAL_VENV_BIN}/faq", *container["args"]]


def http_get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def wait_for(what: str, check: Callable[[], bool], running: list[Running], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in running:
            if child.process.poll() is not None:
                pytest.fail(f"{child.name} exited ({child.process.returncode}):\n{child.output()}")
        try:
            if check():
                return
        except (OSError, redis.RedisError):
            pass
        time.sleep(0.25)
    logs = "\n".join(f"--- {c.name}\n{c.output()[-3000:]}" for c in running)
    pytest.fail(f"timed out waiting for {what}\n{logs}")


@pytest.fixture
def fresh_database() -> Iterator[str]:
    admin_url = os.environ["DATABASE_URL"]
    database = f"faq_chart_{secrets.token_hex(4)}"
    asyncio.run(create_database(admin_url, database))
    try:
        yield with_database(admin_url, database)
    finally:
        asyncio.run(drop_database(admin_url, database))


@pytest.fixture
def spare_redis() -> Iterator[str]:
    url = with_database(os.environ["REDIS_URL"], "7")
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        client.close()


def test_the_rendered_chart_starts_a_working_service(
    tmp_path: Path, fresh_database: str, spare_redis: str
) -> None:
    values = merged(
        production_values(),
        {
            "secrets": {
                "existingSecret": "",
                "databaseUrl": fresh_database,
                "redisUrl": spare_redis,
                "secretKey": Fernet.generate_key().decode(),
            }
        },
    )
    manifests = render(values)
    workdir = tmp_path / "tmp"  # the image's WORKDIR and the pods' emptyDir
    workdir.mkdir()
    base_env = {"HOME": str(workdir), "TMPDIR": str(workdir), "LANG": "C.UTF-8"}
    base_env.update(image_environment())
    running: list[Running] = []

    def environment(container: dict[str, Any]) -> dict[str, str]:
        return {**base_env, **container_environment(manifests, container)}

    def start(name: str, argv: list[str], env: dict[str, str]) -> Running:
        log = tmp_path / f"{name}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                argv,
                env=env,
                cwd=workdir,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        child = Running(name, process, log)
        running.append(child)
        return child

    # 1. The pre-install hook: `faq migrate` on an empty database, then again as pre-upgrade.
    job = find(manifests, "Job", "faq-migrate")
    job_container = only_container(job)
    deadline = job["spec"]["activeDeadlineSeconds"]
    for expected in ("shared: applied", "shared: at head"):
        migrate = subprocess.run(
            command_line(job_container),
            env=environment(job_container),
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=deadline,
        )
        assert migrate.returncode == 0, migrate.stdout + migrate.stderr
        assert expected in migrate.stdout

    # 2. The three Deployments.
    api = find(manifests, "Deployment", "faq-api")
    api_container = only_container(api)
    port = api_container["ports"][0]["containerPort"]
    assert api_container["args"][-2:] == ["--bind", f"0.0.0.0:{port}"]
    local_port = free_port()
    api_argv = command_line(api_container)
    api_argv[-1] = f"127.0.0.1:{local_port}"
    base = f"http://127.0.0.1:{local_port}"

    worker_container = only_container(find(manifests, "Deployment", "faq-worker"))
    scheduler_container = only_container(find(manifests, "Deployment", "faq-scheduler"))
    try:
        start("api", api_argv, environment(api_container))
        worker = start("worker", command_line(worker_container), environment(worker_container))
        scheduler = start(
            "scheduler", command_line(scheduler_container), environment(scheduler_container)
        )

        readiness = api_container["readinessProbe"]["httpGet"]["path"]
        liveness = api_container["livenessProbe"]["httpGet"]["path"]
        wait_for("readiness", lambda: http_get(base + readiness)[0] == 200, running, 90)
        assert http_get(base + liveness)[0] == 200

        # 3. An org and a key, made the way NOTES.txt says (faq in the API container).
        api_env = environment(api_container)
        faq = [f"{LOCAL_VENV_BIN}/faq"]
        created = subprocess.run(
            [*faq, "orgs", "create", "chartco", "--plan", "STARTER", "--json"],
            env=api_env,
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert created.returncode == 0, created.stderr
        assert json.loads(created.stdout)["slug"] == "chartco"
        issued = subprocess.run(
            [*faq, "keys", "create", "chartco", "--scopes", "read", "--json"],
            env=api_env,
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert issued.returncode == 0, issued.stderr
        key = json.loads(issued.stdout)["key"]

        status, body = http_get(
            base + "/api/v1/chartco/categories", {"Authorization": f"Bearer {key}"}
        )
        assert status == 200, body
        slugs = [c["slug"] for c in json.loads(body)["data"]]
        assert slugs == ["uncategorized"]
        assert http_get(base + "/api/v1/chartco/categories")[0] == 401
        status, metrics = http_get(base + "/metrics")
        assert status == 200
        assert b"faq_http_requests_total" in metrics
        assert b"faq_http_request_duration_seconds" in metrics

        # 4. The scheduler holds the lock and enqueues; the worker boots and drains the queues.
        client = redis.Redis.from_url(spare_redis)
        wait_for("the scheduler lock", lambda: client.exists(SCHEDULER_LOCK) == 1, running, 60)
        wait_for("an enqueued job", lambda: "job_enqueued" in scheduler.output(), running, 60)
        wait_for(
            "the worker to boot",
            lambda: "Worker process is ready for action" in worker.output(),
            running,
            90,
        )

        def queued_messages() -> int:
            return sum(int(client.hlen(k)) for k in client.scan_iter("faq:*.msgs"))

        wait_for("the worker to drain the queues", lambda: queued_messages() == 0, running, 60)

        # 5. SIGTERM, as the kubelet sends after preStop; each must exit in its grace period.
        budgets = {
            "api": pod_spec(api)["terminationGracePeriodSeconds"]
            - int(api_container["lifecycle"]["preStop"]["exec"]["command"][1])
        }
        for name in ("worker", "scheduler"):
            budgets[name] = pod_spec(find(manifests, "Deployment", f"faq-{name}"))[
                "terminationGracePeriodSeconds"
            ]
        started = time.monotonic()
        for child in running:
            child.process.send_signal(signal.SIGTERM)
        for child in running:
            remaining = budgets[child.name] - (time.monotonic() - started)
            try:
                code = child.process.wait(max(remaining, 0.1))
            except subprocess.TimeoutExpired:
                pytest.fail(f"{child.name} ignored SIGTERM for {budgets[child.name]}s")
            assert code == 0, f"{child.name} exited {code}:\n{child.output()[-3000:]}"
        # The scheduler gave the lock up, so a replacement takes over at once.
        assert client.exists(SCHEDULER_LOCK) == 0
        client.close()
    finally:
        for child in running:
            if child.process.poll() is None:
                os.killpg(child.process.pid, signal.SIGKILL)
                child.process.wait(10)
