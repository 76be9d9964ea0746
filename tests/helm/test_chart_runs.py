"""Run what the chart tells Kubernetes to run, on this machine.

The container commands and environment come from the rendered manifests (the image's entry
point mapped to .venv/bin/faq, the image's ENV read from the Dockerfile), pointed at a fresh
database on the embedded PostgreSQL and a spare Redis database. The migration hook runs, the
API, worker and scheduler start, a real authenticated request is served, and SIGTERM stops
everything within the grace periods.
"""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from cryptography.fernet import Fernet

from tenancy.embedded import free_port
from tests.helm.dockerfile import final_stage
from tests.helm.processes import LOCAL_FAQ, http, processes
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

pytestmark = pytest.mark.slow

IMAGE_VENV_BIN = "/opt/venv/bin"
SCHEDULER_LOCK = "faq:scheduler:lock"


def image_environment() -> dict[str, str]:
    """The image's ENV, with its virtualenv mapped to this checkout's."""
    env = final_stage().env()
    env["PATH"] = (
        env["PATH"]
        .replace("$PATH", "/usr/local/bin:/usr/bin:/bin")
        .replace(IMAGE_VENV_BIN, str(REPO / ".venv" / "bin"))
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
    return [LOCAL_FAQ, *container["args"]]


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

    def environment(container: dict[str, Any]) -> dict[str, str]:
        return {**base_env, **container_environment(manifests, container)}

    # 1. The pre-install hook: `faq migrate` on an empty database, then again as pre-upgrade.
    job = find(manifests, "Job", "faq-migrate")
    job_container = only_container(job)
    for expected in ("shared: applied", "shared: at head"):
        migrate = subprocess.run(
            command_line(job_container),
            env=environment(job_container),
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=job["spec"]["activeDeadlineSeconds"],
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

    with processes(tmp_path, workdir) as group:
        group.start("api", api_argv, environment(api_container))
        worker = group.start(
            "worker", command_line(worker_container), environment(worker_container)
        )
        scheduler = group.start(
            "scheduler", command_line(scheduler_container), environment(scheduler_container)
        )

        readiness = api_container["readinessProbe"]["httpGet"]["path"]
        liveness = api_container["livenessProbe"]["httpGet"]["path"]
        group.wait_for("readiness", lambda: http("GET", base + readiness)[0] == 200, 90)
        assert http("GET", base + liveness)[0] == 200

        # 3. An org and a key, made the way NOTES.txt says (faq in the API container).
        api_env = environment(api_container)
        created = subprocess.run(
            [LOCAL_FAQ, "orgs", "create", "chartco", "--plan", "STARTER", "--json"],
            env=api_env,
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert created.returncode == 0, created.stderr
        assert json.loads(created.stdout)["slug"] == "chartco"
        issued = subprocess.run(
            [LOCAL_FAQ, "keys", "create", "chartco", "--scopes", "read", "--json"],
            env=api_env,
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert issued.returncode == 0, issued.stderr
        key = json.loads(issued.stdout)["key"]

        categories = base + "/api/v1/chartco/categories"
        status, body = http("GET", categories, {"Authorization": f"Bearer {key}"})
        assert status == 200, body
        assert [c["slug"] for c in json.loads(body)["data"]] == ["uncategorized"]
        assert http("GET", categories)[0] == 401
        status, metrics = http("GET", base + "/metrics")
        assert status == 200
        assert b"faq_http_requests_total" in metrics
        assert b"faq_http_request_duration_seconds" in metrics

        # 4. The scheduler holds the lock and enqueues; the worker boots and drains the queues.
        client = redis.Redis.from_url(spare_redis)
        group.wait_for("the scheduler lock", lambda: client.exists(SCHEDULER_LOCK) == 1, 60)
        group.wait_for("an enqueued job", lambda: "job_enqueued" in scheduler.output(), 60)
        group.wait_for(
            "the worker to boot",
            lambda: "Worker process is ready for action" in worker.output(),
            90,
        )

        def queued_messages() -> int:
            return sum(int(client.hlen(k)) for k in client.scan_iter("faq:*.msgs"))

        group.wait_for("the worker to drain the queues", lambda: queued_messages() == 0, 60)
        # The worker consumes from this broker namespace (so the drained keys were the right ones).
        assert client.zcard("faq:__heartbeats__") >= 1

        # 5. SIGTERM, as the kubelet sends after preStop; each must exit in its grace period.
        pre_stop = int(api_container["lifecycle"]["preStop"]["exec"]["command"][1])
        budgets = {"api": pod_spec(api)["terminationGracePeriodSeconds"] - pre_stop}
        for name in ("worker", "scheduler"):
            deployment = find(manifests, "Deployment", f"faq-{name}")
            budgets[name] = pod_spec(deployment)["terminationGracePeriodSeconds"]
        started = time.monotonic()
        for child in group.running:
            child.process.send_signal(signal.SIGTERM)
        for child in group.running:
            remaining = budgets[child.name] - (time.monotonic() - started)
            try:
                code = child.process.wait(max(remaining, 0.1))
            except subprocess.TimeoutExpired:
                pytest.fail(f"{child.name} ignored SIGTERM for {budgets[child.name]}s")
            assert code == 0, f"{child.name} exited {code}:\n{child.output()[-3000:]}"
        # The scheduler gave the lock up, so a replacement takes over at once.
        assert client.exists(SCHEDULER_LOCK) == 0
        client.close()
