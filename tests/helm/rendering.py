"""Render helm/faq with Helm's own engine (helm-python-sdk bundles Helm's Go library)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml
from cryptography.fernet import Fernet

REPO = Path(__file__).resolve().parents[2]
CHART_DIR = REPO / "helm" / "faq"
PRODUCTION_VALUES = CHART_DIR / "ci" / "production-values.yaml"
RELEASE = "faq"
NAMESPACE = "faq-system"
# kubernetes-validate ships schemas for these; the chart declares kubeVersion >=1.27.
KUBE_VERSIONS = ("1.28.0", "1.33.0")

Manifest = dict[str, Any]


def required_values(
    database_url: str = "postgresql://faq:pw@db.internal:5432/faq",
    redis_url: str = "redis://redis.internal:6379/0",
) -> dict[str, Any]:
    """The only values an install must give when the chart creates the Secret itself."""
    return {
        "secrets": {
            "databaseUrl": database_url,
            "redisUrl": redis_url,
            "secretKey": Fernet.generate_key().decode(),
        }
    }


def production_values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load(PRODUCTION_VALUES.read_text())
    return values


def merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge ``override`` into a copy of ``base`` (what several -f files do)."""
    result = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def render(values: dict[str, Any], *, upgrade: bool = False) -> list[Manifest]:
    """Every manifest the chart renders (hooks included), parsed; NOTES.txt left out."""
    with helm.Chart.load(CHART_DIR) as chart:
        files = chart.render(
            values,
            name=RELEASE,
            namespace=NAMESPACE,
            is_install=not upgrade,
            is_upgrade=upgrade,
        )
    manifests: list[Manifest] = []
    for path, text in sorted(files.items()):
        if path.endswith("NOTES.txt"):
            continue
        manifests.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return manifests


def find(manifests: list[Manifest], kind: str, name: str) -> Manifest:
    matches = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def kinds(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def pod_spec(workload: Manifest) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def only_container(workload: Manifest) -> dict[str, Any]:
    containers = pod_spec(workload)["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


def is_hook(manifest: Manifest) -> bool:
    return "helm.sh/hook" in (manifest["metadata"].get("annotations") or {})
