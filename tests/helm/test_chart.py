"""The chart renders, lints, validates against Kubernetes schemas, and is locked down."""

from __future__ import annotations

import base64
from typing import Any

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest

from tests.helm.rendering import (
    CHART_DIR,
    KUBE_VERSIONS,
    RELEASE,
    Manifest,
    find,
    is_hook,
    kinds,
    merged,
    only_container,
    pod_spec,
    production_values,
    render,
    required_values,
)

WORKLOADS = ("faq-api", "faq-worker", "faq-scheduler")
SECRET_VARIABLES = (
    "DATABASE_URL",
    "REDIS_URL",
    "FAQ_SECRET_KEY",
    "STRIPE_API_KEY",
    "STRIPE_WEBHOOK_SECRET",
)

# The Prometheus Operator CRD is not in kubernetes-validate; these are the fields we rely on,
# as the CRD (monitoring.coreos.com/v1) defines them.
SERVICE_MONITOR_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "spec": {
            "type": "object",
            "required": ["selector", "endpoints"],
            "properties": {
                "selector": {
                    "type": "object",
                    "required": ["matchLabels"],
                    "properties": {
                        "matchLabels": {
                            "type": "object",
                            "additionalProperties": {"type": "string"},
                        }
                    },
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["port", "path"],
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "interval": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                            "scrapeTimeout": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                        },
                    },
                },
            },
        },
    },
}


@pytest.fixture(scope="module")
def default_manifests() -> list[Manifest]:
    return render(required_values())


@pytest.fixture(scope="module")
def production_manifests() -> list[Manifest]:
    return render(production_values(), upgrade=True)


@pytest.fixture(params=["default", "production"])
def manifests(
    request: pytest.FixtureRequest,
    default_manifests: list[Manifest],
    production_manifests: list[Manifest],
) -> list[Manifest]:
    chosen: list[Manifest] = (
        default_manifests if request.param == "default" else production_manifests
    )
    return chosen


def pod_workloads(manifests: list[Manifest]) -> list[Manifest]:
    return [m for m in manifests if m["kind"] in {"Deployment", "Job"}]


# ---- lint and schemas -----------------------------------------------------------------------


@pytest.mark.parametrize("values", ["default", "production"])
def test_chart_lints_clean_in_strict_mode(values: str) -> None:
    chosen = required_values() if values == "default" else production_values()
    report = helm.lint(CHART_DIR, chosen, strict=True, kube_version="v1.30.0")
    assert report["total_charts_linted"] == 1
    assert report["errors"] == []
    # Severity 2 is a warning, 3 an error; only the informational "icon is recommended" may stay.
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_every_manifest_validates_against_kubernetes_schemas(
    manifests: list[Manifest], kube_version: str
) -> None:
    validated = 0
    for manifest in manifests:
        if manifest["kind"] == "ServiceMonitor":
            jsonschema.validate(manifest, SERVICE_MONITOR_SCHEMA)
            continue
        # strict: unknown fields (a typo in a template) fail too.
        kubernetes_validate.validate(manifest, kube_version, strict=True)
        validated += 1
    assert validated >= 8


def test_default_render_has_the_expected_objects(default_manifests: list[Manifest]) -> None:
    names = {(m["kind"], m["metadata"]["name"]) for m in default_manifests}
    assert names == {
        ("ConfigMap", "faq-config"),
        ("Secret", "faq-secrets"),
        ("Deployment", "faq-api"),
        ("Deployment", "faq-worker"),
        ("Deployment", "faq-scheduler"),
        ("Service", "faq-api"),
        ("PodDisruptionBudget", "faq-api"),
        ("PodDisruptionBudget", "faq-worker"),
        ("ConfigMap", "faq-migrate"),
        ("Secret", "faq-migrate"),
        ("Job", "faq-migrate"),
    }


def test_production_render_adds_ingress_hpas_and_service_monitor(
    production_manifests: list[Manifest],
) -> None:
    names = {(m["kind"], m["metadata"]["name"]) for m in production_manifests}
    assert {
        ("Ingress", "faq"),
        ("HorizontalPodAutoscaler", "faq-api"),
        ("HorizontalPodAutoscaler", "faq-worker"),
        ("ServiceMonitor", "faq-api"),
    } <= names
    # existingSecret: the chart creates no Secret at all, hooks included.
    assert kinds(production_manifests, "Secret") == []


# ---- security -------------------------------------------------------------------------------


def test_every_pod_is_locked_down(manifests: list[Manifest]) -> None:
    workloads = pod_workloads(manifests)
    assert len(workloads) == 4
    for workload in workloads:
        spec = pod_spec(workload)
        assert spec["automountServiceAccountToken"] is False
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] == 10001
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        container = only_container(workload)
        context = container["securityContext"]
        assert context["runAsNonRoot"] is True
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["privileged"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}
        # The one writable path is an emptyDir on /tmp.
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert mounts == {"/tmp": "tmp"}
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert "emptyDir" in volumes["tmp"]
        resources = container["resources"]
        assert {"cpu", "memory"} <= resources["requests"].keys()
        assert "memory" in resources["limits"]


def test_secrets_reach_containers_only_through_secret_refs(manifests: list[Manifest]) -> None:
    for workload in pod_workloads(manifests):
        container = only_container(workload)
        env = {e["name"]: e for e in container["env"]}
        for variable in SECRET_VARIABLES:
            assert "value" not in env[variable], variable
            assert "secretKeyRef" in env[variable]["valueFrom"]
        for source in container["envFrom"]:
            assert set(source) == {"configMapRef"}
    for config_map in kinds(manifests, "ConfigMap"):
        assert not set(config_map["data"]) & set(SECRET_VARIABLES)


def test_secret_holds_the_given_values_base64_encoded(default_manifests: list[Manifest]) -> None:
    values = required_values(database_url="postgresql://a:b@pg:5432/x")
    secret = find(render(values), "Secret", "faq-secrets")
    decoded = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert decoded == {
        "DATABASE_URL": "postgresql://a:b@pg:5432/x",
        "REDIS_URL": values["secrets"]["redisUrl"],
        "FAQ_SECRET_KEY": values["secrets"]["secretKey"],
    }


def test_existing_secret_is_referenced_with_its_own_key_names() -> None:
    values = merged(
        production_values(),
        {"secrets": {"existingSecretKeys": {"databaseUrl": "pg-url", "secretKey": "fernet"}}},
    )
    manifests = render(values)
    for workload in pod_workloads(manifests):
        env = {
            e["name"]: e["valueFrom"]["secretKeyRef"]
            for e in only_container(workload)["env"]
            if "valueFrom" in e
        }
        assert env["DATABASE_URL"] == {"name": "faq-production", "key": "pg-url"}
        assert env["FAQ_SECRET_KEY"] == {"name": "faq-production", "key": "fernet"}
        assert env["REDIS_URL"] == {"name": "faq-production", "key": "REDIS_URL"}
        assert env["STRIPE_API_KEY"]["optional"] is True


def test_changing_a_setting_rolls_the_pods() -> None:
    base = required_values()
    before = find(render(base), "Deployment", "faq-api")
    after = find(render(merged(base, {"config": {"logLevel": "DEBUG"}})), "Deployment", "faq-api")
    key = "checksum/config"
    annotations = ("spec", "template", "metadata", "annotations")

    def dig(manifest: Manifest) -> Any:
        for part in annotations:
            manifest = manifest[part]
        return manifest

    assert dig(before)[key] != dig(after)[key]


# ---- probes, commands, graceful shutdown ----------------------------------------------------


def test_api_probes_and_command(manifests: list[Manifest]) -> None:
    api = find(manifests, "Deployment", "faq-api")
    container = only_container(api)
    assert container["args"] == ["serve", "--bind", "0.0.0.0:8000"]
    assert container["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}


def test_api_shutdown_budget_covers_drain_and_graceful_timeout(
    manifests: list[Manifest],
) -> None:
    api = find(manifests, "Deployment", "faq-api")
    container = only_container(api)
    sleep = container["lifecycle"]["preStop"]["exec"]["command"]
    assert sleep[0] == "sleep"
    graceful = {e["name"]: e.get("value") for e in container["env"]}["FAQ_GRACEFUL_TIMEOUT_SECONDS"]
    budget = pod_spec(api)["terminationGracePeriodSeconds"]
    assert int(sleep[1]) >= 5
    assert budget >= int(sleep[1]) + int(graceful)


def test_a_grace_period_too_short_for_the_drain_fails_the_render() -> None:
    values = merged(required_values(), {"api": {"terminationGracePeriodSeconds": 15}})
    with pytest.raises(helm.HelmError, match="terminationGracePeriodSeconds"):
        render(values)


def test_worker_and_scheduler_commands(manifests: list[Manifest]) -> None:
    worker = only_container(find(manifests, "Deployment", "faq-worker"))
    assert worker["args"][0] == "worker"
    assert worker["args"][1::2] == ["--processes", "--threads", "--shutdown-seconds"]
    grace = pod_spec(find(manifests, "Deployment", "faq-worker"))["terminationGracePeriodSeconds"]
    assert grace >= 30
    # In-flight messages get the grace period less 10 s: the process exits before SIGKILL.
    assert float(worker["args"][6]) == grace - 10
    scheduler = find(manifests, "Deployment", "faq-scheduler")
    assert only_container(scheduler)["args"] == ["scheduler"]
    assert scheduler["spec"]["replicas"] == 1


def test_migration_is_a_pre_install_and_pre_upgrade_hook_that_runs_first(
    manifests: list[Manifest],
) -> None:
    job = find(manifests, "Job", "faq-migrate")
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert only_container(job)["args"] == ["migrate"]
    assert pod_spec(job)["restartPolicy"] == "Never"
    # What the Job reads must exist before it: hook copies with a lower weight, or a Secret
    # that predates the release. Never the release's own ConfigMap/Secret (not yet created).
    container = only_container(job)
    config_name = container["envFrom"][0]["configMapRef"]["name"]
    config = find(manifests, "ConfigMap", config_name)
    assert is_hook(config)
    job_weight = int(annotations["helm.sh/hook-weight"])
    assert int(config["metadata"]["annotations"]["helm.sh/hook-weight"]) < job_weight
    secret_name = {e["name"]: e for e in container["env"]}["DATABASE_URL"]["valueFrom"][
        "secretKeyRef"
    ]["name"]
    chart_secrets = [s for s in kinds(manifests, "Secret") if s["metadata"]["name"] == secret_name]
    for secret in chart_secrets:
        assert is_hook(secret)
        assert int(secret["metadata"]["annotations"]["helm.sh/hook-weight"]) < job_weight
    # Either way the Job sees exactly the settings the Deployments see.
    assert config["data"] == find(manifests, "ConfigMap", "faq-config")["data"]


# ---- scaling and exposure -------------------------------------------------------------------


def test_hpa_owns_replicas_when_enabled(production_manifests: list[Manifest]) -> None:
    for component in ("api", "worker"):
        deployment = find(production_manifests, "Deployment", f"faq-{component}")
        assert "replicas" not in deployment["spec"]
        hpa = find(production_manifests, "HorizontalPodAutoscaler", f"faq-{component}")
        assert hpa["spec"]["scaleTargetRef"] == {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": f"faq-{component}",
        }
        assert hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]


def test_replicas_come_from_values_without_hpa(default_manifests: list[Manifest]) -> None:
    manifests = render(
        merged(required_values(), {"api": {"replicas": 5}, "worker": {"replicas": 3}})
    )
    assert find(manifests, "Deployment", "faq-api")["spec"]["replicas"] == 5
    assert find(manifests, "Deployment", "faq-worker")["spec"]["replicas"] == 3
    assert kinds(default_manifests, "HorizontalPodAutoscaler") == []


def test_selectors_match_their_pods(manifests: list[Manifest]) -> None:
    api_labels = find(manifests, "Deployment", "faq-api")["spec"]["template"]["metadata"]["labels"]
    service = find(manifests, "Service", "faq-api")
    assert service["spec"]["selector"].items() <= api_labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    for pdb in kinds(manifests, "PodDisruptionBudget"):
        target = find(manifests, "Deployment", pdb["metadata"]["name"])
        labels = target["spec"]["template"]["metadata"]["labels"]
        assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    # The three Deployments never select each other's pods.
    selectors = [
        frozenset(find(manifests, "Deployment", name)["spec"]["selector"]["matchLabels"].items())
        for name in WORKLOADS
    ]
    assert len(set(selectors)) == 3


def test_ingress_routes_the_api_but_not_metrics(production_manifests: list[Manifest]) -> None:
    ingress = find(production_manifests, "Ingress", RELEASE)
    paths = [p["path"] for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]
    assert "/api/v1" in paths
    assert not any("/metrics".startswith(p) for p in paths)
    backends = {
        p["backend"]["service"]["name"]
        for rule in ingress["spec"]["rules"]
        for p in rule["http"]["paths"]
    }
    assert backends == {"faq-api"}


def test_ingress_routes_the_help_center(production_manifests: list[Manifest]) -> None:
    """The hosted help center (``/hc/{org}``) is reachable through the chart's Ingress, by
    default and in the production example."""
    default = merged(required_values(), {"ingress": {"enabled": True}})
    for manifests in (render(default), production_manifests):
        ingress = find(manifests, "Ingress", RELEASE)
        paths = {p["path"] for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]}
        assert "/hc" in paths


def test_the_client_is_taken_behind_the_pod_network_only(default_manifests: list[Manifest]) -> None:
    """X-Forwarded-For is believed from the private networks pods live in (the ingress
    controller's), never from anyone; the deprecated boolean stays off."""
    from api.http.client_addresses import forwarded_client
    from tenancy.settings import Settings

    config = find(default_manifests, "ConfigMap", "faq-config")["data"]
    assert config["FAQ_TRUST_FORWARDED_FOR"] == "false"
    networks = Settings(faq_trusted_proxies=config["FAQ_TRUSTED_PROXIES"]).trusted_proxy_networks()
    assert {str(n) for n in networks} >= {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"}
    assert not any(n.is_global for n in networks)
    # Behind an ingress pod: the client it appended; a client straight from the internet
    # cannot choose its own address.
    assert forwarded_client("10.42.0.17", ["6.6.6.6, 203.0.113.5"], networks) == "203.0.113.5"
    assert forwarded_client("203.0.113.5", ["10.1.1.1"], networks) == "203.0.113.5"
    values = merged(required_values(), {"config": {"trustedProxies": "10.42.0.0/16"}})
    config = find(render(values), "ConfigMap", "faq-config")["data"]
    assert config["FAQ_TRUSTED_PROXIES"] == "10.42.0.0/16"


def test_keep_alive_outlives_the_ingress_idle_timeout() -> None:
    """The API keeps an idle connection longer than the ingress keeps it for reuse, so the
    ingress never sends a request down a connection the API is closing (a 502)."""
    values = merged(required_values(), {"ingress": {"enabled": True}})
    manifests = render(values)
    config = find(manifests, "ConfigMap", "faq-config")["data"]
    annotations = find(manifests, "Ingress", RELEASE)["metadata"]["annotations"]
    idle = int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"])
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-send-timeout"]) == idle
    assert float(config["FAQ_KEEP_ALIVE_SECONDS"]) > idle >= 60
    # The release's own annotations win over the chart's.
    values = merged(
        values,
        {"ingress": {"annotations": {"nginx.ingress.kubernetes.io/proxy-read-timeout": "30"}}},
    )
    annotations = find(render(values), "Ingress", RELEASE)["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"] == "30"
    too_short = merged(required_values(), {"config": {"keepAliveSeconds": 60}})
    with pytest.raises(helm.HelmError, match="keepAliveSeconds"):
        render(too_short)


def test_service_monitor_scrapes_api_metrics(production_manifests: list[Manifest]) -> None:
    monitor = find(production_manifests, "ServiceMonitor", "faq-api")
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    assert monitor["spec"]["endpoints"][0]["port"] == "http"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    service = find(production_manifests, "Service", "faq-api")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )


# ---- values.schema.json ---------------------------------------------------------------------

BAD_VALUES: list[tuple[str, dict[str, Any], str]] = [
    ("no secrets at all", {}, "databaseUrl"),
    ("not a Fernet key", {"secrets": {"secretKey": "hunter2"}}, "secretKey"),
    ("mysql url", {"secrets": {"databaseUrl": "mysql://db/faq"}}, "databaseUrl"),
    (
        # The API's change listener reads the URL with asyncpg, the engine through SQLAlchemy:
        # no TLS parameter works for both, PGSSLMODE does (docs/operations.md).
        "tls in the url",
        {"secrets": {"databaseUrl": "postgresql://a@db/faq?sslmode=require"}},
        "databaseUrl",
    ),
    ("mount over /tmp", {"extraVolumeMounts": [{"name": "x", "mountPath": "/tmp"}]}, "mountPath"),
    ("redis url", {"secrets": {"redisUrl": "http://redis:6379"}}, "redisUrl"),
    ("replicas as a string", {"api": {"replicas": "3"}}, "replicas"),
    ("zero api replicas", {"api": {"replicas": 0}}, "replicas"),
    ("three schedulers", {"scheduler": {"replicas": 3}}, "replicas"),
    ("typo in a key", {"api": {"replica": 2}}, "replica"),
    ("unknown top-level key", {"wokrer": {}}, "wokrer"),
    ("root", {"podSecurityContext": {"runAsNonRoot": False}}, "runAsNonRoot"),
    (
        "privilege escalation",
        {"containerSecurityContext": {"allowPrivilegeEscalation": True}},
        "allowPrivilegeEscalation",
    ),
    (
        "added capability",
        {"containerSecurityContext": {"capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN"]}}},
        "add",
    ),
    ("bad memory", {"worker": {"resources": {"limits": {"memory": "lots"}}}}, "memory"),
    ("dev mode", {"config": {"env": "dev"}}, "env"),
    ("bad log level", {"config": {"logLevel": "LOUD"}}, "logLevel"),
    ("rate limits", {"config": {"rateLimits": "FREE:300"}}, "rateLimits"),
    ("http return url", {"config": {"billingReturnUrl": "http://x"}}, "billingReturnUrl"),
    ("pull policy", {"image": {"pullPolicy": "Sometimes"}}, "pullPolicy"),
    ("bad digest", {"image": {"digest": "latest"}}, "digest"),
    ("cpu target", {"api": {"autoscaling": {"targetCPUUtilizationPercentage": 150}}}, "target"),
    ("ingress path", {"ingress": {"hosts": [{"host": "a.b", "paths": ["api"]}]}}, "paths"),
    ("trusted proxies", {"config": {"trustedProxies": "everyone"}}, "trustedProxies"),
    ("no keep-alive", {"config": {"keepAliveSeconds": 0}}, "keepAliveSeconds"),
]


@pytest.mark.parametrize(
    ("case", "override", "mentions"), BAD_VALUES, ids=[c[0] for c in BAD_VALUES]
)
def test_schema_rejects_bad_values_at_install(
    case: str, override: dict[str, Any], mentions: str
) -> None:
    base = {} if case == "no secrets at all" else required_values()
    values = merged(base, override)
    with helm.Chart.load(CHART_DIR) as chart, pytest.raises(helm.HelmValuesError) as failure:
        chart.validate_schema(chart.merge_values(values))
    assert mentions in str(failure.value)
    # And the install itself (the render it starts with) refuses the same values.
    with pytest.raises(helm.HelmError):
        render(values)


def test_schema_accepts_default_and_production_values() -> None:
    with helm.Chart.load(CHART_DIR) as chart:
        chart.validate_schema(chart.merge_values(required_values()))
        chart.validate_schema(chart.merge_values(production_values()))
        assert chart.schema is not None
        assert chart.schema["additionalProperties"] is False


def test_database_tls_through_pgsslmode_and_a_mounted_ca() -> None:
    values = merged(
        required_values(),
        {
            "config": {
                "extraEnv": {
                    "PGSSLMODE": "verify-full",
                    "PGSSLROOTCERT": "/etc/faq/db-ca/ca.crt",
                }
            },
            "extraVolumes": [{"name": "db-ca", "configMap": {"name": "managed-postgres-ca"}}],
            "extraVolumeMounts": [
                {"name": "db-ca", "mountPath": "/etc/faq/db-ca", "readOnly": True}
            ],
        },
    )
    manifests = render(values)
    for kube_version in KUBE_VERSIONS:
        for manifest in manifests:
            kubernetes_validate.validate(manifest, kube_version, strict=True)
    config = find(manifests, "ConfigMap", "faq-config")["data"]
    assert config["PGSSLMODE"] == "verify-full"
    assert config["PGSSLROOTCERT"] == "/etc/faq/db-ca/ca.crt"
    assert find(manifests, "ConfigMap", "faq-migrate")["data"] == config
    for workload in pod_workloads(manifests):
        mounts = {m["mountPath"] for m in only_container(workload)["volumeMounts"]}
        assert mounts == {"/tmp", "/etc/faq/db-ca"}
        volumes = {v["name"]: v for v in pod_spec(workload)["volumes"]}
        assert volumes["db-ca"]["configMap"] == {"name": "managed-postgres-ca"}


# Settings the chart leaves out on purpose: the base URL of the Stripe test double.
NOT_FOR_A_CLUSTER = {"STRIPE_API_BASE"}


def test_every_setting_of_the_service_can_be_set_through_the_chart() -> None:
    """A new field in tenancy/settings.py fails here until the chart knows about it."""
    from tenancy.settings import Settings

    variables = {name.upper() for name in Settings.model_fields}
    values = merged(
        required_values(),
        {
            "config": {
                "rateLimits": "FREE=300,STARTER=1200",
                "billingReturnUrl": "https://app.example.com/billing",
                "webhookCaBundle": {"configMapName": "receiver-ca", "key": "ca.crt"},
                # An embeddings endpoint (issue 28): its url, model and size come together.
                "embeddings": {
                    "url": "https://embeddings.example.com/v1",
                    "model": "text-embedding-3-small",
                    "dimensions": 1536,
                },
            }
        },
    )
    manifests = render(values)
    configured = set(find(manifests, "ConfigMap", "faq-config")["data"])
    assert find(manifests, "ConfigMap", "faq-config")["data"]["FAQ_EMBEDDINGS_DIMENSIONS"] == "1536"
    api = only_container(find(manifests, "Deployment", "faq-api"))
    from_secrets = {e["name"] for e in api["env"] if "valueFrom" in e}
    assert variables - NOT_FOR_A_CLUSTER <= configured | from_secrets
    assert api["args"] == ["serve", "--bind", "0.0.0.0:8000"]
    assert "FAQ_GRACEFUL_TIMEOUT_SECONDS" in {e["name"] for e in api["env"]}
    # The CA bundle is mounted where FAQ_WEBHOOK_CA_BUNDLE points.
    mounts = {m["name"]: m["mountPath"] for m in api["volumeMounts"]}
    assert find(manifests, "ConfigMap", "faq-config")["data"]["FAQ_WEBHOOK_CA_BUNDLE"] == (
        mounts["webhook-ca"] + "/ca.crt"
    )
