"""The vocabulary cache reads an org's vocabulary again (a scan of its search vectors) only
when the org wrote something since: a stale entry of an org without writes is kept, its age
reset; after a write (the org's generation bumped) it is read again in the background."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from api.answers.vocabulary import REFRESH_SECONDS, Vocabulary, VocabularyCache
from tenancy.generations import bump
from tenancy.ids import new_id
from tests.conftest import OrgFactory

__all__ = ["OrgFactory"]


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not reached")


def age(vocabulary: Vocabulary) -> None:
    vocabulary.loaded_at -= REFRESH_SECONDS + 1


async def test_a_stale_vocabulary_is_read_again_only_after_a_write() -> None:
    schema = "t_" + new_id("org").split("_")[1].lower()
    key = f'"{schema}"'
    loads: list[int] = []

    async def loader() -> Vocabulary:
        loads.append(1)
        return Vocabulary({"refund": len(loads)}, documents=1, mean_length=1.0)

    cache = VocabularyCache()
    first = await cache.get(key, "en", loader)
    assert loads == [1]
    age(first)
    assert await cache.get(key, "en", loader) is first  # served while checked
    await until(lambda: first.loaded_at > 0 and not cache.loading)
    assert loads == [1]  # nothing written: not read again
    assert (await cache.get(key, "en", loader)) is first

    await bump(schema)  # a write of the org
    age(first)
    assert await cache.get(key, "en", loader) is first  # the stale one, once more
    await until(lambda: len(loads) == 2 and not cache.loading)
    fresh = await cache.get(key, "en", loader)
    assert fresh.frequencies == {"refund": 2}
    # Another org's write does not make this one read again.
    await bump("t_" + new_id("org").split("_")[1].lower())
    age(fresh)
    await cache.get(key, "en", loader)
    await until(lambda: not cache.loading)
    assert len(loads) == 2
