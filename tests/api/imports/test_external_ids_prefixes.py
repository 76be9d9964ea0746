"""Import and export jobs' ids come from ``tenancy.ids`` like every other id (``imp_``,
``exp_`` and a ULID)."""

from __future__ import annotations

from tenancy.ids import PREFIXES, looks_like_id, new_id
from tests.api.imports.helpers import upload
from tests.fixtures.orgs import OrgClient


def test_imp_and_exp_are_known_prefixes() -> None:
    assert {"imp", "exp"} <= PREFIXES
    assert looks_like_id(new_id("imp"), "imp") and looks_like_id(new_id("exp"), "exp")


async def test_jobs_ids_are_prefixed_ulids(org: OrgClient) -> None:
    r = await upload(org, "csv", b"title,answer\nHi,There\n")
    assert r.status_code == 202
    assert looks_like_id((await r.get_json())["data"]["id"], "imp")
    r = await org.post("/exports")
    assert r.status_code == 202
    assert looks_like_id((await r.get_json())["data"]["id"], "exp")
