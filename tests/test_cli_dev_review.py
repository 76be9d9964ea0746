"""The first hour of team publishing (issue 41), the CLI run as a user runs it: the key
``faq dev`` (``make run``) prints is its demo org's first admin member's, and the "Try it"
block of docs/team-publishing.md runs as written beside it (the plan moved to PRO, review
turned on, a draft someone else wrote approved with that key, then published).
``faq orgs ensure`` makes an org's first admin member when missing, and only then a key."""

from __future__ import annotations

import hashlib
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tenancy.embedded import free_port
from tests.fixtures.orgs import unique_slug
from tests.test_cli import faq

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "team-publishing.md"
DOC_KEY = "faq_the_key_make_run_printed"
DOC_HOST = "http://127.0.0.1:8000"


def try_it_block() -> str:
    """The shell block of the doc's "Try it on the demo org" section."""
    section = DOC.read_text().split("## Try it on the demo org", 1)[1].split("\n## ", 1)[0]
    blocks: list[str] = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1
    return blocks[0]


def get(url: str, key: str) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")
    except OSError:
        return 0, None  # not listening yet


@pytest.fixture
def dev_env() -> Iterator[dict[str, str]]:
    """The session's PostgreSQL, a Redis database of its own (the worker `faq dev` starts
    takes no other test's messages) and a data folder of its own."""
    folder = Path(tempfile.mkdtemp(prefix="faq-dev-review-"))
    redis = urlsplit(os.environ["REDIS_URL"])
    env = {
        **os.environ,
        "REDIS_URL": urlunsplit(redis._replace(path="/9")),
        "FAQ_DATA_DIR": str(folder),
        "FAQ_LOG_LEVEL": "WARNING",
    }
    yield env
    subprocess.run(["rm", "-rf", str(folder)], check=False)


@contextmanager
def running_dev(env: dict[str, str], *args: str) -> Iterator[tuple[str, Path]]:
    """``faq dev ARGS`` on a free port until the block ends: its base URL and its output."""
    port = free_port()
    out = Path(env["FAQ_DATA_DIR"]) / f"dev-{port}.log"
    with out.open("wb") as log:
        dev = subprocess.Popen(
            [sys.executable, "-m", "tasks.cli", "dev", "--bind", f"127.0.0.1:{port}", *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=ROOT,
        )
    try:
        deadline = time.monotonic() + 240
        while "Ctrl-C stops all" not in out.read_text():
            assert dev.poll() is None, out.read_text()
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", out
    finally:
        dev.send_signal(signal.SIGTERM)
        try:
            dev.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(dev.pid, signal.SIGKILL)
            raise


def answering(url: str, key: str) -> tuple[int, Any]:
    """``get``, once the API listens (within a minute)."""
    deadline = time.monotonic() + 60
    while (answer := get(url, key))[0] == 0:
        assert time.monotonic() < deadline, url
        time.sleep(0.25)
    return answer


def test_the_key_make_run_prints_approves_a_draft_as_the_doc_shows(
    dev_env: dict[str, str],
) -> None:
    with running_dev(dev_env) as (base, out):
        printed = out.read_text()
        found = re.search(r"^  (faq_\S+)$", printed, re.M)
        assert found is not None, printed
        key = found.group(1)
        assert "org 'demo' created on plan STARTER" in printed
        assert "faq orgs set-plan demo PRO" in printed  # how to try review

        # The key is the first admin member's.
        status, members = answering(f"{base}/api/v1/demo/members", key)
        assert status == 200, members
        [admin] = members["data"]
        assert admin["role"] == "admin" and admin["email"] == "admin@demo.example"
        _, keys = get(f"{base}/api/v1/demo/keys", key)
        fingerprint = hashlib.sha256(key.encode()).hexdigest()[:16]
        mine = [k for k in keys["data"] if k["fingerprint"] == fingerprint]
        assert [(k["memberId"], k["scopes"]) for k in mine] == [(admin["id"], ["admin"])]

        # The doc's commands, as written: only the key and the port differ.
        block = try_it_block()
        assert block.count(DOC_KEY) == 1 and DOC_HOST in block
        script = block.replace(DOC_KEY, key).replace(DOC_HOST, base)
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            env=dev_env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr + done.stdout
        assert done.stdout.splitlines() == [
            "org demo is on plan PRO",
            '{"requireReview":true}',
            '["answer"]',
            "pending",
            "Within 14 days, to your card.",  # the admin read the draft
            "approved",  # by the admin member: Ada wrote it
            "published",
        ], done.stdout + done.stderr
        _, workflow = get(f"{base}/api/v1/demo/settings/workflow", key)
        assert workflow["data"] == {"requireReview": True}

    # `make run PLAN=ENTERPRISE` with the data kept: the plan moves; no new key is printed,
    # the command for one of the same admin member is, and works as printed.
    planned = subprocess.run(
        ["make", "-n", "run", "PLAN=ENTERPRISE"], cwd=ROOT, text=True, capture_output=True
    )
    assert "faq dev --bind 127.0.0.1:8000 --plan ENTERPRISE" in planned.stdout, planned.stdout
    with running_dev(dev_env, "--plan", "ENTERPRISE") as (base, out):
        printed = out.read_text()
        assert "org 'demo' exists (data reused), on plan ENTERPRISE" in printed, printed
        assert re.search(r"^  faq_", printed, re.M) is None  # no key each start
        command = f".venv/bin/faq keys create demo --scopes admin --member {admin['id']}"
        assert command in printed, printed
        made = subprocess.run(
            [*command.split(), "--json"], env=dev_env, cwd=ROOT, capture_output=True, text=True
        )
        assert made.returncode == 0, made.stderr
        new_key = json.loads(made.stdout)["key"]
        status, members = answering(f"{base}/api/v1/demo/members", new_key)
        assert status == 200 and [m["id"] for m in members["data"][:1]] == [admin["id"]]


def test_orgs_ensure_makes_the_first_admin_member_only_when_missing() -> None:
    slug = unique_slug("ensure")
    made = faq("orgs", "create", slug, "--plan", "STARTER", "--json")
    assert made.returncode == 0, made.stderr  # an org of before: keys, no member
    first = faq("orgs", "ensure", slug, "--admin-email", "owner@acme.example", "--json")
    assert first.returncode == 0, first.stderr
    ensured = json.loads(first.stdout)
    assert ensured["created"] is False and ensured["org"]["plan"] == "STARTER"
    assert ensured["admin"]["role"] == "admin"
    assert ensured["admin"]["email"] == "owner@acme.example"
    assert ensured["key"].startswith("faq_")
    assert ensured["fingerprint"] == hashlib.sha256(ensured["key"].encode()).hexdigest()[:16]
    second = faq("orgs", "ensure", slug, "--admin-email", "someone@acme.example", "--json")
    assert second.returncode == 0, second.stderr
    again = json.loads(second.stdout)
    assert again["admin"]["id"] == ensured["admin"]["id"] and again["key"] is None

    fresh = unique_slug("ensure")
    new = faq("orgs", "ensure", fresh, "--plan", "PRO", "--admin-email", "a@b.example")
    assert new.returncode == 0, new.stderr
    assert f"org {fresh} (" in new.stdout and "created, on plan PRO" in new.stdout
    assert "its admin key (shown once): faq_" in new.stdout
    bad = faq("orgs", "ensure", unique_slug("ensure"), "--admin-email", "not an email")
    assert bad.returncode == 2 and "--admin-email" in bad.stderr
