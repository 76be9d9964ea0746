"""Session-wide real services, the app under test, and org fixtures."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tests.fixtures.orgs import OrgClient, make_org
from tests.fixtures.services import Services

_services = Services()


def pytest_configure(config: pytest.Config) -> None:
    _services.start()
    config.faq_services = _services  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    _services.stop()


@pytest.fixture(scope="session")
def services() -> Services:
    return _services


@pytest.fixture(scope="session")
async def app() -> AsyncIterator[Quart]:
    from api.app import create_app

    quart_app = create_app()
    async with quart_app.test_app():
        yield quart_app


@pytest.fixture(scope="session")
def engine(app: Quart) -> AsyncEngine:
    from tenancy.middleware import Tenancy

    ext: Tenancy = app.extensions["tenancy"]
    return ext.engine


@pytest.fixture
def client(app: Quart) -> Any:
    return app.test_client()


OrgFactory = Callable[..., Awaitable[OrgClient]]


@pytest.fixture
def org_factory(engine: AsyncEngine, client: Any) -> OrgFactory:
    async def factory(plan: Plan = Plan.STARTER) -> OrgClient:
        return await make_org(engine, client, plan)

    return factory


@pytest.fixture
async def org(org_factory: OrgFactory) -> OrgClient:
    """A STARTER org with a read, a write and an admin key."""
    return await org_factory()


@pytest.fixture
async def other_org(org_factory: OrgFactory) -> OrgClient:
    return await org_factory()
