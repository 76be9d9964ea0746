"""Read the Dockerfile's stages: what the image runs (no Docker engine is needed)."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from tests.helm.rendering import REPO

DOCKERFILE = REPO / "Dockerfile"


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]

    def last(self, keyword: str) -> str:
        found = self.all(keyword)
        assert found, f"no {keyword} in stage {self.name}"
        return found[-1]

    def exec_form(self, keyword: str) -> list[str]:
        """ENTRYPOINT/CMD in exec (JSON) form; shell form would break signal delivery."""
        value = json.loads(self.last(keyword))
        assert isinstance(value, list)
        return [str(part) for part in value]

    def env(self) -> dict[str, str]:
        variables: dict[str, str] = {}
        for args in self.all("ENV"):
            for pair in shlex.split(args):
                name, _, value = pair.partition("=")
                variables[name] = value
        return variables


def logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    current = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        lines.append(current + stripped)
        current = ""
    return lines


def stages(path: Path = DOCKERFILE) -> list[Stage]:
    args: dict[str, str] = {}
    result: list[Stage] = []
    for line in logical_lines(path.read_text()):
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        rest = rest.strip()
        if keyword == "ARG" and not result:
            name, _, default = rest.partition("=")
            args[name] = default
        elif keyword == "FROM":
            parts = rest.split()
            base = parts[0]
            for name, value in args.items():
                base = base.replace("${" + name + "}", value)
            alias = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            result.append(Stage(base=base, name=alias))
        else:
            assert result, f"{keyword} before FROM"
            result[-1].instructions.append((keyword, rest))
    return result


def final_stage() -> Stage:
    return stages()[-1]
