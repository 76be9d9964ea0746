"""The per-request cost of a cached help-center question page (issue 14 / issue 16's bench row):
a page served from the cache runs on the event loop alone (no hop to the thread pool, which
costs more than the rest of the page), and its feedback form stays per visitor."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from jinja2 import Template
from quart import Quart

from tests.api.helpcenter.helpers import enable, question
from tests.fixtures.orgs import OrgClient

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture
async def published(org: OrgClient) -> dict[str, Any]:
    await enable(org)
    return await question(org, "How do I reset my password?", "Use the *reset* link.")


class ExecutorSpy:
    """Records what the running loop sends to an executor (Quart's ``run_sync``)."""

    def __init__(self) -> None:
        self.calls: list[Callable[..., Any]] = []

    def watch(self, loop: asyncio.AbstractEventLoop) -> Iterator[None]:
        original = loop.run_in_executor

        def run_in_executor(executor: Any, func: Callable[..., Any], *args: Any) -> Any:
            self.calls.append(args[0] if args else func)
            return original(executor, func, *args)

        loop.run_in_executor = run_in_executor  # type: ignore[method-assign, assignment]
        try:
            yield
        finally:
            del loop.run_in_executor


async def test_a_cached_question_page_uses_no_thread(
    app: Quart, org: OrgClient, published: dict[str, Any]
) -> None:
    url = f"/hc/{org.slug}/en/questions/{published['slug']}"
    reader = app.test_client()
    assert (await reader.get(url)).status_code == 200  # fills the page cache
    spy = ExecutorSpy()
    for _ in spy.watch(asyncio.get_running_loop()):
        r = await reader.get(url)
        thanks = await reader.get(f"{url}?feedback=thanks")
    assert r.status_code == 200
    assert TOKEN.search(await r.get_data(as_text=True)) is not None
    assert "Thank you for your feedback." in await thanks.get_data(as_text=True)
    assert spy.calls == [], f"a cached page went through the thread pool: {spy.calls}"


async def test_each_visitor_gets_a_form_of_their_own_from_the_cached_page(
    app: Quart, org: OrgClient, published: dict[str, Any]
) -> None:
    """The form is rendered per request (its token is bound to the visitor's cookie and
    address): two visitors of one cached page get different tokens and cookies, and a vote
    with either token is accepted for its own visitor only."""
    url = f"/hc/{org.slug}/en/questions/{published['slug']}"
    first, second = app.test_client(), app.test_client()
    tokens = []
    for reader in (first, second, first):
        r = await reader.get(url)
        assert r.status_code == 200
        found = TOKEN.search(await r.get_data(as_text=True))
        assert found is not None
        tokens.append(found.group(1))
    assert tokens[0] != tokens[1]
    # The second visitor's token is not the first's: each vote needs its own visitor's token.
    swapped = await first.post(f"{url}/feedback", form={"helpful": "yes", "csrf_token": tokens[1]})
    assert swapped.status_code == 403
    own = await second.post(f"{url}/feedback", form={"helpful": "no", "csrf_token": tokens[1]})
    assert own.status_code == 303
    again = await first.post(f"{url}/feedback", form={"helpful": "yes", "csrf_token": tokens[2]})
    assert again.status_code == 303


async def test_a_cached_question_page_renders_no_template(
    app: Quart, org: OrgClient, published: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page and its feedback form come from the caches: the next visitor's request only
    makes its own token (no Jinja render), and still gets a token of its own."""
    url = f"/hc/{org.slug}/en/questions/{published['slug']}"
    first, second = app.test_client(), app.test_client()
    assert (await first.get(url)).status_code == 200
    renders: list[str | None] = []
    original = Template.render_async

    async def counting(self: Template, *args: Any, **kwargs: Any) -> str:
        renders.append(self.name)
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(Template, "render_async", counting)
    r = await second.get(url)
    assert r.status_code == 200
    found = TOKEN.search(await r.get_data(as_text=True))
    assert found is not None and "hcCsrfTokenMarker" not in found.group(1)
    assert renders == []
