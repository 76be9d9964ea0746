"""The console of the first hour (issue 32), the CLI run as a user runs it: ``faq dev`` logs
every process in one human-readable format with no line for idle periodic jobs, the path of a
404, refused webhooks and failed deliveries; the other commands use its servers; a
configuration error is one line, never a traceback; JSON stays the production default."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from tenancy.embedded import free_port
from tenancy.process_logging import drop_idle_jobs

pytestmark = pytest.mark.slow

FAQ = [sys.executable, "-m", "tasks.cli"]
CONSOLE_LINE = re.compile(
    r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \[(debug|info|warning|error|critical) *\] \S"
)
# What the test session's environment sets that a developer's shell does not.
SESSION_ONLY = (
    "DATABASE_URL",
    "REDIS_URL",
    "FAQ_SECRET_KEY",
    "FAQ_ENV",
    "FAQ_LOG_LEVEL",
    "FAQ_LOG_FORMAT",
    "FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS",
)


def _fresh_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SESSION_ONLY}
    return {**env, "FAQ_LOG_LEVEL": "INFO", **extra}


def _wait(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


def _http(method: str, url: str, key: str = "", body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        request.add_header("Content-Type", "application/json")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return error.code, json.loads(raw)
        except ValueError:
            return error.code, raw


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data folder the embedded PostgreSQL's system user can reach (pytest's are 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="faq-dev-"))
    folder.chmod(0o755)
    yield folder
    subprocess.run(["rm", "-rf", str(folder)], check=False)


def test_faq_dev_speaks_one_format_quietly_and_shares_its_servers(data_dir: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    out = data_dir / "dev.log"
    env = _fresh_env(FAQ_DATA_DIR=str(data_dir))
    with out.open("wb") as log:
        dev = subprocess.Popen(
            [*FAQ, "dev", "--bind", f"127.0.0.1:{port}"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait(lambda: "Running on" in out.read_text(), 240, "the API")
        running_at = time.monotonic()
        services = json.loads((data_dir / "dev-services.json").read_text())
        assert services["pid"] == dev.pid
        assert set(services["env"]) >= {"DATABASE_URL", "REDIS_URL", "FAQ_SECRET_KEY"}

        # Another command, in a shell where nothing is set, uses the servers of `faq dev`.
        report = subprocess.run(
            [*FAQ, "analytics", "demo"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert report.returncode == 0, report.stderr
        assert "Analytics of demo" in report.stdout and "Traceback" not in report.stderr

        key = re.search(r"^  (faq_\S+)$", out.read_text(), re.M)
        assert key is not None
        assert _http("GET", f"{base}/no-such-page")[0] == 404
        assert _http("GET", f"{base}/")[0] == 302
        hooks = f"{base}/api/v1/demo/webhooks"
        local = {"url": "https://127.0.0.1:9/hook", "events": ["question.created"]}
        assert _http("POST", hooks, key.group(1), local)[0] == 400  # refused: a loopback host
        status, created = _http(
            "POST",
            hooks,
            key.group(1),
            {"url": "https://nowhere.invalid/hook", "events": ["question.created"]},
        )
        assert status == 201, created
        ping = f"{hooks}/{created['data']['id']}/test"
        assert _http("POST", ping, key.group(1))[0] == 202  # its delivery cannot resolve
        _wait(lambda: "delivery_refused" in out.read_text(), 90, "the refused delivery")
        # The scheduler enqueues the relay and the re-drive every 5 seconds: two rounds.
        time.sleep(max(0.0, running_at + 12 - time.monotonic()))
    finally:
        dev.send_signal(signal.SIGTERM)
        try:
            dev.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(dev.pid, signal.SIGKILL)  # it and the servers it started
            raise
    assert not (data_dir / "dev-services.json").exists()

    text = out.read_text()
    lines = text.splitlines()
    started = next(i for i, line in enumerate(lines) if "Ctrl-C stops all" in line)
    logged = lines[started + 1 :]
    not_console = [line for line in logged if not CONSOLE_LINE.match(line)]
    assert not_console == [], not_console  # one format: no JSON, no `[PID …]`, no traceback
    assert "Traceback" not in text
    assert text.count("Running on") == 1
    assert "job_enqueued" not in text
    for idle in ("purge_deleted", "purge_history", "analytics_collect", "help_center_views"):
        assert idle not in text, idle
    assert any("Worker process is ready" in line for line in logged)  # Dramatiq's, formatted
    assert any("GET /no-such-page 404" in ln and "route_not_found" in ln for ln in logged)
    assert any("webhook_url_refused" in line for line in logged)
    assert any("delivery_refused" in line and "attempt=1" in line for line in logged)
    assert len(lines) <= 60, text


def test_a_configuration_error_is_one_line_without_a_traceback(tmp_path: Path) -> None:
    """No `faq dev` runs beside (an empty data folder): what is missing or wrong is named."""
    env = _fresh_env(FAQ_DATA_DIR=str(tmp_path))
    cases: list[tuple[list[str], dict[str, str], str]] = [
        (["analytics", "demo"], {}, "DATABASE_URL is not set"),
        (["keys", "revoke", "0" * 16], {}, "DATABASE_URL is not set"),
        (["worker"], {"DATABASE_URL": "postgresql://x@127.0.0.1:1/x"}, "REDIS_URL is not set"),
        (["scheduler"], {}, "REDIS_URL is not set"),
        (["serve"], {"FAQ_PUBLISH_SWEEP_SECONDS": "0"}, "FAQ_PUBLISH_SWEEP_SECONDS='0'"),
        (
            ["serve"],
            {"DATABASE_URL": "postgresql://x@127.0.0.1:1/x", "REDIS_URL": "redis://127.0.0.1:1"},
            "FAQ_SECRET_KEY is not set",
        ),
        (
            ["serve"],
            {
                "DATABASE_URL": "postgresql://x@127.0.0.1:1/x",
                "REDIS_URL": "redis://127.0.0.1:1",
                "FAQ_SECRET_KEY": "x",
                "FAQ_LOG_FORMAT": "xml",
            },
            "FAQ_LOG_FORMAT must be json or console",
        ),
    ]
    for argv, extra, expected in cases:
        done = subprocess.run(
            [*FAQ, *argv], env={**env, **extra}, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, (argv, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr + done.stdout, (argv, done.stderr)
        assert done.stderr.count("\n") == 1, (argv, done.stderr)
        assert done.stderr.startswith(f"faq {argv[0]}: "), (argv, done.stderr)
        assert expected in done.stderr, (argv, done.stderr)


def test_json_stays_the_production_format_of_every_process(tmp_path: Path) -> None:
    """Without ``FAQ_LOG_FORMAT``: the API's and the worker's lines, Hypercorn's and Dramatiq's
    included, are JSON objects, and "Running on" is said once."""
    port = free_port()
    env = {**os.environ, "FAQ_LOG_LEVEL": "INFO"}
    env.pop("FAQ_LOG_FORMAT", None)
    outputs = {name: tmp_path / f"{name}.log" for name in ("serve", "worker")}
    argv = {
        "serve": [*FAQ, "serve", "--bind", f"127.0.0.1:{port}"],
        "worker": [*FAQ, "worker", "--processes", "1", "--threads", "1"],
    }
    processes = {}
    for name, path in outputs.items():
        with path.open("wb") as log:
            processes[name] = subprocess.Popen(
                argv[name], env=env, stdout=log, stderr=subprocess.STDOUT
            )
    try:
        _wait(lambda: "Running on" in outputs["serve"].read_text(), 120, "the API")
        _wait(lambda: "is ready for action" in outputs["worker"].read_text(), 120, "the worker")
        assert _http("GET", f"http://127.0.0.1:{port}/missing")[0] == 404
        _wait(lambda: "/missing" in outputs["serve"].read_text(), 10, "the access log")
    finally:
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            process.wait(60)
    for name, path in outputs.items():
        lines = [line for line in path.read_text().splitlines() if line.strip()]
        assert lines, name
        for line in lines:
            assert isinstance(json.loads(line), dict), (name, line)
    serve = [json.loads(line) for line in outputs["serve"].read_text().splitlines() if line]
    assert sum("Running on" in line["event"] for line in serve) == 1
    missing = [line for line in serve if line.get("path") == "/missing"]
    assert missing and missing[0]["route"] == "unmatched" and missing[0]["status"] == 404


@pytest.mark.parametrize(
    ("event", "dropped"),
    [
        ({"event": "job_enqueued", "job": "outbox-relay"}, True),
        ({"event": "purge_deleted", "orgs": 3, "questions": 0, "failed": 0}, True),
        ({"event": "purge_deleted", "orgs": 3, "questions": 2, "failed": 0}, False),
        ({"event": "outbox_swept", "events": 0, "orgs": 1, "failed": 1}, False),
        ({"event": "analytics_collect", "orgs": 0, "ok": True}, False),
        ({"event": "scheduler_lock_acquired"}, False),
        ({"event": "request", "status": 0, "route": "/x"}, False),
    ],
)
def test_idle_periodic_jobs_are_left_out_of_the_console(
    event: dict[str, Any], dropped: bool
) -> None:
    if dropped:
        with pytest.raises(structlog.DropEvent):
            drop_idle_jobs(None, "info", dict(event))
    else:
        assert drop_idle_jobs(None, "info", dict(event)) == event


def test_make_run_takes_a_port_and_faq_dev_explains_bind() -> None:
    root = Path(__file__).resolve().parent.parent
    planned = subprocess.run(
        ["make", "-n", "run", "PORT=8080"], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert "faq dev --bind 127.0.0.1:8080" in planned.stdout, planned.stdout
    default = subprocess.run(["make", "-n", "run"], cwd=root, capture_output=True, text=True)
    assert "faq dev --bind 127.0.0.1:8000" in default.stdout, default.stdout
    helped = subprocess.run([*FAQ, "dev", "--help"], capture_output=True, text=True, timeout=60)
    assert "--bind HOST:PORT" in helped.stdout and "PORT=8080" in helped.stdout, helped.stdout


# ---- issue 41: request lines short enough to read; long jobs say where they are -------------


def _serve_console_lines(tmp_path: Path, requests: list[tuple[str, str, dict[str, str]]]) -> str:
    """A real ``faq serve`` in the console format (the test session's servers): the requests
    sent, then its output."""
    port = free_port()
    out = tmp_path / "serve.log"
    env = {**os.environ, "FAQ_LOG_LEVEL": "INFO", "FAQ_LOG_FORMAT": "console", "NO_COLOR": "1"}
    with out.open("wb") as log:
        serve = subprocess.Popen(
            [*FAQ, "serve", "--bind", f"127.0.0.1:{port}"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait(lambda: "Running on" in out.read_text(), 120, "the API")
        for method, path, headers in requests:
            request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
            for name, value in headers.items():
                request.add_header(name, value)
            with contextlib.suppress(urllib.error.HTTPError):
                urllib.request.urlopen(request, timeout=30).close()
        _wait(lambda: out.read_text().count(" request_id=") >= len(requests), 20, "the lines")
    finally:
        serve.terminate()
        serve.wait(60)
    return out.read_text()


def test_a_request_line_is_short_with_its_error_code_and_a_short_id(tmp_path: Path) -> None:
    long_id = "3f2a9c1b" + "0" * 24  # as a proxy sends them: 32 hex characters
    text = _serve_console_lines(
        tmp_path,
        [
            ("GET", "/healthz", {"X-Request-Id": long_id}),
            ("GET", "/no-such-page", {}),
            ("GET", "/api/v1/no-such-org-x/questions", {}),
            ("POST", "/api/v1/no-such-org-x/questions", {"Content-Type": "application/json"}),
        ],
    )
    lines = [line for line in text.splitlines() if " request_id=" in line]
    assert all(CONSOLE_LINE.match(line) for line in lines), lines
    ok = next(line for line in lines if "GET /healthz 200" in line)
    assert ok.endswith(" request_id=3f2a9c1b"), ok  # shortened, at the end
    assert long_id not in text
    missing = next(line for line in lines if "GET /no-such-page 404" in line)
    assert "route_not_found" in missing, missing
    unknown = next(line for line in lines if "GET /api/v1/no-such-org-x/questions " in line)
    status = int(unknown.split("/questions ")[1].split()[0])
    assert status >= 400 and re.search(r" ms [a-z_]+ request_id=", unknown), unknown
    for line in lines:
        path = line.split("] ")[1].split()[1]
        assert len(line) <= 90 + len(path), line  # the path, and at most 90 more
        assert "route=" not in line and "duration_ms" not in line, line
        assert not re.search(r"[0-9a-f]{32}", line), line


@pytest.mark.parametrize(
    ("event", "line"),
    [
        (
            {"event": "request", "method": "GET", "route": "/api/v1/<org>/questions",
             "path": "/api/v1/demo/questions", "status": 200, "duration_ms": 3.14159,
             "request_id": "0123456789abcdef0123456789abcdef"},
            {"event": "GET /api/v1/demo/questions 200 3.1 ms", "request_id": "01234567"},
        ),
        (
            {"event": "request", "method": "POST", "route": "/x", "status": 409,
             "duration_ms": 1234.5, "error": "slug_conflict", "request_id": "abc"},
            {"event": "POST /x 409 1.23 s slug_conflict", "request_id": "abc"},
        ),
        (
            {"request_id": "0123456789abcdef", "event": "delivery_refused", "attempt": 1},
            {"event": "delivery_refused", "attempt": 1, "request_id": "01234567"},
        ),
    ],
)  # fmt: skip
def test_the_console_request_line(event: dict[str, Any], line: dict[str, Any]) -> None:
    from tenancy.process_logging import readable_requests

    shown = readable_requests(None, "info", dict(event))
    assert shown == line and list(shown)[-1] == list(line)[-1]


def _log_lines(stderr: str) -> list[dict[str, Any]]:
    """The JSON log lines of a command's stderr (between the redraws of its progress bar)."""
    found = []
    for piece in re.split(r"[\r\n]", stderr):
        start = piece.find('{"')
        if start >= 0:
            with contextlib.suppress(ValueError):
                found.append(json.loads(piece[start:]))
    return found


async def test_an_import_and_a_backfill_log_start_progress_and_end(
    org: Any, tmp_path: Path
) -> None:
    """``faq import`` of 450 rows (three batches of 200) and ``faq embeddings backfill`` of
    them, with a progress line allowed as often as wished: a line at the start, one per batch
    at most (never one per item), one at the end with the counts; stdout stays the report."""
    import asyncio

    upload = tmp_path / "many.csv"
    rows = ["title,answer,status"] + [f"Question {n},Answer {n},draft" for n in range(450)]
    upload.write_text("\n".join(rows) + "\n")
    env = {**os.environ, "FAQ_LOG_LEVEL": "INFO", "FAQ_PROGRESS_LOG_SECONDS": "0",
           "FAQ_LOG_FORMAT": "json"}  # fmt: skip

    def faq(*argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*FAQ, *argv], env={**env, **extra}, capture_output=True, text=True, timeout=300
        )

    done = await asyncio.to_thread(faq, "import", org.slug, str(upload), "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]["created"] == 450
    lines = [line for line in _log_lines(done.stderr) if line["event"].startswith("import_")]
    events = [line["event"] for line in lines]
    assert events == ["import_started", *["import_progress"] * 3, "import_finished"], events
    assert lines[0]["bytes_total"] == upload.stat().st_size and lines[0]["format"] == "csv"
    assert [line["items"] for line in lines[1:4]] == [200, 400, 450]
    assert lines[3]["percent"] == 100
    assert lines[-1]["status"] == "succeeded" and lines[-1]["created"] == 450
    assert lines[-1]["seconds"] >= 0

    backfill = await asyncio.to_thread(
        faq, "embeddings", "backfill", org.slug, FAQ_LOG_FORMAT="console", NO_COLOR="1"
    )
    assert backfill.returncode == 0, backfill.stderr
    assert backfill.stdout.strip().startswith(f"{org.slug}: ")  # the summary alone
    said = [line for line in backfill.stderr.splitlines() if "embeddings_backfill" in line]
    assert [CONSOLE_LINE.match(line) is not None for line in said] == [True] * len(said), said
    kinds = [line.split("] ")[1].split()[0] for line in said]
    assert kinds == ["embeddings_backfill_started", *["embeddings_backfill_progress"] * 3,
                     "embeddings_backfill_finished"], said  # fmt: skip
    assert "questions=450" in said[3] and all(len(line) <= 200 for line in said), said
