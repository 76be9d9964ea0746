"""The docs name files that exist: every ``path/to/file.py`` (or ``.md``, ``.toml``, ``.yaml``)
written in README.md and docs/*.md is a file of the repository, so a move that forgets its
docs fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = ("tenancy", "billing", "api", "tasks", "tests", "bench", "migrations", "docs", "helm")
EXTENSIONS = "py|md|toml|yaml|tpl|txt|json"
PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(TOP)})/[\w./-]*\w\.(?:{EXTENSIONS}))")


def test_every_path_in_the_docs_exists() -> None:
    missing = sorted(
        f"{doc.relative_to(ROOT)}: {path}"
        for doc in DOCS
        for path in set(PATH.findall(doc.read_text()))
        if not (ROOT / path).exists() and not path.startswith("bench/results")
    )
    assert missing == []
