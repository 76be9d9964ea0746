"""The layering holds and is enforced: the import contracts in ``pyproject.toml`` (run by
``make lint``) pass on the tree and fail on an upward import or a cycle; no module is over
500 lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from tests.architecture.contracts import module_cycles

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tenancy", "billing", "api", "tasks")
MAX_LINES = 500
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},  # no wrapped lines in the report
    )


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """The four packages, the contracts and our contract type, copied to a scratch folder
    (lint-imports analyses the packages found from its working directory first)."""
    for name in PACKAGES:
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "tests" / "architecture").mkdir(parents=True)
    for name in ("__init__.py", "architecture/__init__.py", "architecture/contracts.py"):
        shutil.copy(ROOT / "tests" / name, tmp_path / "tests" / name)
    return tmp_path


def test_no_module_is_over_500_lines() -> None:
    over = {
        str(path.relative_to(ROOT)): lines
        for name in PACKAGES
        for path in (ROOT / name).rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert over == {}


def test_the_tree_keeps_every_import_contract() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_upward_import_breaks_the_layers(tree_copy: Path) -> None:
    with (tree_copy / "tenancy" / "clock.py").open("a") as module:
        module.write("\nimport billing.plans  # upward: the foundation must not know billing\n")
    result = _lint_imports(tree_copy)
    assert result.returncode != 0
    assert "tenancy is not allowed to import billing" in result.stdout
    assert "tenancy.clock -> billing.plans" in result.stdout


def test_a_cycle_between_two_modules_breaks_the_contract(tree_copy: Path) -> None:
    # Both in the foundation, so only the cycle contract can catch it.
    with (tree_copy / "tenancy" / "clock.py").open("a") as module:
        module.write("\nimport tenancy.ids\n")
    with (tree_copy / "tenancy" / "ids.py").open("a") as module:
        module.write("\nimport tenancy.clock\n")
    result = _lint_imports(tree_copy)
    assert result.returncode != 0
    assert "import each other in a cycle: tenancy.clock, tenancy.ids" in result.stdout


def test_cycle_finder_on_a_small_graph() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c", "p.d"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")  # a -> b -> c -> a
    graph.add_import(importer="p.d", imported="p.a")  # d only points into the cycle
    assert module_cycles(graph, ["p"]) == [["p.a", "p.b", "p.c"]]
    graph.remove_import(importer="p.c", imported="p.a")
    assert module_cycles(graph, ["p"]) == []
