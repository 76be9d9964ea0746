"""Rendering answers without holding the event loop or unbounded memory (issue 26): a hostile
100,000-character answer took 0.9-9 s of markdown-it on the loop, and the rendered answers
were an ``lru_cache(4096)`` of sources up to 100,000 characters and HTML up to ~9x larger.

Now the render runs in its own thread (``render.ANSWERS``) while the loop serves other
requests, and the cache of rendered answers is bounded by bytes (``render.RENDERED``)."""

from __future__ import annotations

import asyncio
import gc
import time

import pytest

from api.helpcenter import render
from tests.api.helpcenter.helpers import enable, question
from tests.fixtures.orgs import OrgClient
from tests.reliability.test_memory_helpcenter import LARGEST_ANSWER, SLOWEST_ANSWER

pytestmark = pytest.mark.serial

LOOP_GAP_BOUND_MS = 250.0  # the loop's longest pause while a hostile answer renders


async def loop_gaps(work: asyncio.Task[object]) -> float:
    """The longest the event loop went without running this coroutine (1 ms sleeps) while
    ``work`` ran, in ms."""
    longest = 0.0
    while not work.done():
        started = time.perf_counter()
        await asyncio.sleep(0.001)
        longest = max(longest, (time.perf_counter() - started) * 1000)
    return longest


async def test_a_hostile_answer_renders_while_the_loop_serves_others(org: OrgClient) -> None:
    await enable(org)
    for answer in (SLOWEST_ANSWER, LARGEST_ANSWER):
        q = await question(org, "Hostile answer", answer)
        render.RENDERED.clear()
        page = asyncio.create_task(org.client.get(f"/hc/{org.slug}/en/questions/{q['slug']}"))
        started = time.perf_counter()
        longest = await loop_gaps(page)
        took = (time.perf_counter() - started) * 1000
        response = await page
        assert response.status_code == 200
        assert took > 4 * longest, (took, longest)  # it did take long: the loop did not wait
        assert longest < LOOP_GAP_BOUND_MS, (longest, took)


async def test_full_collections_wait_for_the_render_and_come_back() -> None:
    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []

    def spy(source: str, external_images: bool) -> str:
        seen.append(gc.get_threshold())
        return render.render_answer(source, external_images)

    loop = asyncio.get_running_loop()
    with render.full_collections_deferred():
        inner = gc.get_threshold()
        html = await loop.run_in_executor(render.ANSWERS, spy, "*hi*", False)
        assert gc.get_threshold() == inner  # nested: still deferred
    assert html == "<p><em>hi</em></p>\n"
    assert inner[:2] == before[:2] and inner[2] > 10**9 and seen == [inner]
    assert gc.get_threshold() == before


async def test_rendered_answers_are_bounded_by_bytes() -> None:
    render.RENDERED.clear()
    # ~600 KB of HTML each: 16 MiB keeps some of them, never more than its bytes.
    answers = [f"{i}\n\n" + "[a](b) " * 14_000 for i in range(40)]
    for answer in answers:
        html = await render.answer_html(answer)
        assert html.startswith(f"<p>{answer[: answer.index(chr(10))]}</p>")
        assert render.RENDERED.bytes <= render.RENDERED_BYTES
    assert 10 <= len(render.RENDERED) < 40
    # The latest ones are kept (LRU), the first ones went.
    key = render.cache_key(answers[-1], external_images=False)
    assert render.RENDERED.get(key) is not None
    assert render.RENDERED.get(render.cache_key(answers[0], external_images=False)) is None
    # An HTML over the entry bound is not kept at all (it would push out many others).
    small = render.RenderedAnswers(max_bytes=10_000, max_entry=2_000)
    small.put((b"big", False), "x" * 3_000)
    small.put((b"fits", False), "y" * 1_000)
    assert small.get((b"big", False)) is None and small.get((b"fits", False)) is not None
    assert render.MAX_RENDERED == render.RENDERED_BYTES // 8


async def test_the_cache_keys_on_the_source_and_the_image_setting() -> None:
    source = "![logo](https://cdn.example.com/logo.png)"
    off = await render.answer_html(source)
    on = await render.answer_html(source, external_images=True)
    assert "<img" not in off and '<a href="https://cdn.example.com/logo.png"' in off
    assert '<img src="https://cdn.example.com/logo.png" alt="logo">' in on
    assert await render.answer_html(source) == off  # each from its own entry
    assert render.cache_key(source, external_images=False) != render.cache_key(
        source, external_images=True
    )
    assert len(render.cache_key("x" * 100_000, external_images=False)[0]) <= 32
