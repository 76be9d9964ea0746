"""Session-wide real services, the app under test, and org fixtures.

Each pytest process that runs tests (the only one, or each ``pytest-xdist`` worker) starts its
own embedded PostgreSQL and Redis in ``pytest_configure``, before any test module (and so any
module of the service) is imported: settings and the Dramatiq broker read their URLs from the
environment. The xdist controller only hands out files and starts nothing.

How ``make test`` runs the suite (``tests/fixtures/scheduling.py``): the tests not marked
``serial`` in parallel workers, files (and the packages in ``ONE_WORKER_PACKAGES``) kept on one
worker, those marked ``slow`` first; then the ``serial`` ones in one process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from quart import Quart
from sqlalchemy.ext.asyncio import AsyncEngine

from billing.plans import Plan
from tests.fixtures.orgs import OrgClient, make_org
from tests.fixtures.scheduling import (
    FileScheduling,
    is_xdist_controller,
    slow_files_first,
)
from tests.fixtures.services import Services

_services = Services()


def pytest_configure(config: pytest.Config) -> None:
    if not is_xdist_controller(config):
        _services.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    _services.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow_files_first(items)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> FileScheduling:
    return FileScheduling(config, log)


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
    from api.http.binding import Tenancy

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
