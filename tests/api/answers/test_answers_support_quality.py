"""The support-phrasing set (issue 38, ``bench/answers/support*``): a SaaS help center loaded
through the API, its embeddings written, then every question customers ask in support's words
("can't log in", "pricing", "how do I add my coworkers") through ``/answers`` with a read key and
no synonym of the org's own. Target: P@1 >= 0.8 with the support lexicon on; with every group
switched off (the ranking before the lexicon) it is measured the same way and must be lower."""

from __future__ import annotations

from typing import Any

import pytest

from bench.answers_quality import (
    SUPPORT_FAQ,
    TARGET_SUPPORT_P_AT_1,
    Ranked,
    evaluate,
    load_support_set,
)
from tasks.embeddings import backfill_org
from tests.api.answers.test_answers_quality import load_faq as load_evaluation_faq
from tests.fixtures.orgs import OrgClient

pytestmark = pytest.mark.slow


async def load_faq(org: OrgClient) -> dict[str, str]:
    """The support FAQ through the API: question id -> entry id."""
    return await load_evaluation_faq(org, SUPPORT_FAQ)


async def test_support_phrasings_meet_the_target_with_no_org_synonyms(
    org: OrgClient, engine: Any
) -> None:
    entry_of = await load_faq(org)
    assert (await backfill_org(engine, org.info.id)).embedded == 2 * len(entry_of) == 60
    r = await org.get("/synonyms")
    assert (await r.get_json())["data"]["groups"] == []

    async def rank(text: str) -> Ranked:
        r = await org.get("/answers", query={"q": text, "limit": 5}, scope="read")
        body = await r.get_json()
        assert r.status_code == 200, (text, body)
        return [
            (entry_of[item["question"]["id"]], item["score"], item["confident"])
            for item in body["data"]
        ]

    questions = load_support_set()
    after = await evaluate(rank, questions, concurrency=4)
    r = await org.get("/synonyms/lexicon")
    every = [g["id"] for g in (await r.get_json())["data"]["groups"]]
    r = await org.request("PUT", "/synonyms/lexicon", json={"disabled": every})
    assert r.status_code == 200
    before = await evaluate(rank, questions, concurrency=4)
    print(f"support set: lexicon on {after.as_json()}; off {before.as_json()}")
    assert after.answerable == 102 and after.unanswerable == 10
    assert after.p_at_1 >= TARGET_SUPPORT_P_AT_1, (after.as_json(), after.misses)
    assert after.p_at_1 > before.p_at_1 and after.mrr_at_5 > before.mrr_at_5
