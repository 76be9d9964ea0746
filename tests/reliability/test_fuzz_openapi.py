"""Schemathesis against the service's own /openapi.json, over real HTTP to `faq serve`:
every operation, bounded examples, positive and negative. No 5xx, no response that breaks
its declared schema, and no request the schema forbids that the server accepts."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.fixtures.live_server import LiveServer, live_server  # noqa: F401

pytestmark = pytest.mark.slow

MAX_EXAMPLES = 10
# These two call Stripe, which is not reachable from here; tests/billing covers them against a
# local stand-in for the Stripe API.
CALLS_STRIPE = {"POST /api/v1/{org}/billing/checkout", "POST /api/v1/{org}/billing/portal"}


def _run_operation(operation: Any, mode: GenerationMode, server: LiveServer) -> list[str]:
    failures: list[str] = []
    auth = {"Authorization": f"Bearer {server.admin_key}"}

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        derandomize=True,
    )
    def run(case: Any) -> None:
        if "org" in (case.path_parameters or {}):
            case.path_parameters["org"] = server.org_slug
        try:
            # Schema-valid but meaningless values (an invented cursor or parent id) are rightly
            # refused with 400, so "positive data acceptance" is not a rule of this API.
            case.call_and_validate(
                base_url=server.base_url,
                headers=auth,
                excluded_checks=[positive_data_acceptance],
            )
        except (Exception, BaseExceptionGroup) as exc:  # collected per operation, reported together
            failures.append(f"{operation.label} [{mode}]: {_summary(exc)}")

    try:
        run()
    except (
        Exception,
        BaseExceptionGroup,
    ) as exc:  # hypothesis re-raises what it found: report it the same way
        failures.append(f"{operation.label} [{mode}]: {_summary(exc)}")
    return failures


def _summary(exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return " | ".join(lines[:12])[:600]


def test_every_operation_holds_its_contract(live_server: LiveServer) -> None:  # noqa: F811
    schema = schemathesis.openapi.from_url(f"{live_server.base_url}/openapi.json")
    # A generated body past FAQ_MAX_BODY_BYTES (an answer far over its maxLength) is rightly
    # refused with 413 before it is parsed: a rejection like 400, which Schemathesis's default
    # list of rejecting statuses leaves out.
    rejection = schema.config.checks.negative_data_rejection
    rejection.expected_statuses = [*rejection.expected_statuses, "413"]
    operations = [
        op
        for op in (result.ok() for result in schema.get_all_operations())
        if op.label not in CALLS_STRIPE
    ]
    assert len(operations) >= 8
    failures: list[str] = []
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            failures.extend(_run_operation(operation, mode, live_server))
    assert failures == [], "\n".join(sorted(set(failures)))
