"""Session-wide real services, the app under test, and org fixtures.

The embedded PostgreSQL and Redis start when this file is imported, before any module of
the service is: settings and the Dramatiq broker read their URLs from the environment.
"""

from __future__ import annotations

from tests.fixtures.services import Services

_services = Services()
_services.start()

from collections.abc import AsyncIterator, Awaitable, Callable  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
from quart import Quart  # noqa: E402
from sqlalchemy.ext.asyncio import AsyncEngine  # noqa: E402

from billing.plans import Plan  # noqa: E402
from tests.fixtures.orgs import OrgClient, make_org  # noqa: E402


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
    from api.binding import Tenancy

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
    """A second org, for cross-tenant tests."""
    return await org_factory()
