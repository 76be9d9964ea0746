"""Hostile files and templates against a real ``faq serve`` (issue 42's property): whatever
Hypothesis makes of archives (members, compression methods, ratios), JSON (nesting, long
lists, broken tails), YAML front matter (aliases, nesting), CSV (fields, quotes), vendor HTML
and label templates, within the plan's upload limit, every answer is a 2xx or a 4xx with a
reason, the process's peak RSS grows by at most ``RSS_GROWTH_MB`` and a cheap request sent
meanwhile waits at most ``CHEAP_MS``. Serial: it measures the process every org shares."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.fixtures.bounded import ApiProcess, api_process, fetch
from tests.fixtures.live_server import org_with_admin_key

pytestmark = pytest.mark.serial

RSS_GROWTH_MB = 64.0
CHEAP_MS = 100.0
EXAMPLES = settings(
    max_examples=10,
    deadline=None,
    derandomize=True,  # the same examples every run: a failure is reproduced by running again
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MEDIA = {
    "faq": "application/zip",
    "markdown": "application/zip",
    "zendesk": "application/json",
    "intercom": "application/json",
    "csv": "text/csv",
}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[ApiProcess, str, str]]:
    with api_process({"FAQ_AUTH_FAILURES_PER_MINUTE": "100000"}) as api:
        slug, key = org_with_admin_key("hostile", "PRO")
        warm_up(api, slug, key)
        yield api, slug, key


def warm_up(api: ApiProcess, slug: str, key: str) -> None:
    """What a first request loads once for every org (the embedder, the search vocabulary,
    the parsers' modules) is loaded before anything is measured: the bound is on what an
    input costs, not on a process's first use."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    on = json.dumps({"helpCenter": {"enabled": True}}).encode()
    fetch(f"{api.base_url}/api/v1/{slug}/settings", method="PATCH", headers=headers, body=on)
    for _ in range(2):
        fetch(f"{api.base_url}/hc/{slug}/en/search?q=refund")
        fetch(f"{api.base_url}/api/v1/{slug}/answers?q=refund", headers=headers)
    fine = {
        "zendesk": b'{"articles": [{"id": 1, "title": "T", "body": "<p>x</p>"}]}',
        "intercom": b'{"articles": [{"id": "1", "title": "T", "body": "<p>x</p>"}]}',
        "csv": b"title,answer\nT,A\n",
    }
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as z:
        z.writestr("a.md", "---\ntitle: T\n---\nA\n")
    fine["markdown"] = fine["faq"] = packed.getvalue()
    for fmt, body in fine.items():
        url = f"{api.base_url}/api/v1/{slug}/imports?format={fmt}&dryRun=true"
        fetch(url, method="POST", headers={**headers, "Content-Type": MEDIA[fmt]}, body=body)


def send(served: tuple[ApiProcess, str, str], fmt: str, body: bytes) -> None:
    api, slug, key = served
    url = f"{api.base_url}/api/v1/{slug}/imports?format={fmt}&dryRun=true"
    headers = {"Authorization": f"Bearer {key}", "Content-Type": MEDIA[fmt]}
    seen = api.observe(lambda: fetch(url, method="POST", headers=headers, body=body, timeout=60))
    status, _, answer = seen.result
    assert 200 <= status < 500, (status, answer[:300])
    if status >= 400:
        assert json.loads(answer)["error"]["message"], answer[:300]
    growth = seen.peak_rss_mb - seen.before_rss_mb
    assert growth <= RSS_GROWTH_MB, (fmt, len(body), seen)
    assert seen.cheap_max_ms <= CHEAP_MS, (fmt, len(body), seen)


# Units repeated into a member or a value: what compresses best, parses slowest, nests deepest.
UNITS = st.sampled_from(
    [
        b"\n",
        b" ",
        b"[",
        b"{}",
        b"[],",
        b'{"a":',
        b"- - - a\n",
        b"*a ",
        b"<b>",
        b"<!-- c -->",
        b"\xff",
    ]
)
METHODS = st.sampled_from(
    [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]
)


def sizes(most: int) -> st.SearchStrategy[int]:
    """1 to ``most``, spread over orders of magnitude (the large ones are the point)."""
    return st.sampled_from([min(4**e, most) for e in range(most.bit_length() // 2 + 1)])


@st.composite
def hostile_bytes(draw: Any, most: int = 4 * 2**20) -> bytes:
    unit = draw(UNITS)
    count = draw(sizes(most // len(unit)))
    tail = draw(st.sampled_from([b"", b"\n{bad", b'"]}', b"\n---\n"]))
    return unit * count + tail


@st.composite
def archives(draw: Any) -> bytes:
    out = io.BytesIO()
    names = ["manifest.json", "questions.ndjson", "categories.ndjson", "a.md", "b/c.md"]
    with zipfile.ZipFile(out, "w") as z:
        for name in draw(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True)):
            data = draw(hostile_bytes())
            if name == "manifest.json" and draw(st.booleans()):
                data = b'{"format": "faq-export", "version": 1}'
            z.writestr(name, data, compress_type=draw(METHODS))
    return out.getvalue()


def aliases(depth: int, width: int) -> bytes:
    lines = ["a0: &a0 [x]"] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, depth + 1)
    ]
    return ("---\n" + "\n".join(lines) + f"\ntitle: *a{depth}\n---\nBody\n").encode()


def zip_of(name: str, data: bytes, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as z:
        z.writestr(name, data)
    return out.getvalue()


# The extremes, whatever Hypothesis draws besides: the rows of the table and their kin.
@example(body=zip_of("questions.ndjson", b" " * 2**26 + b"\n{", zipfile.ZIP_BZIP2), fmt="faq")
@example(body=zip_of("questions.ndjson", b"\n" * 2**26 + b"{"), fmt="faq")
@example(body=zip_of("questions.ndjson", b'{"a":' * 2**20), fmt="faq")
@example(body=zip_of("a.md", b"- - - a\n" * 2**18), fmt="markdown")
@example(body=zip_of("a.md", b"x" * 2**24, zipfile.ZIP_LZMA), fmt="markdown")
@given(body=archives(), fmt=st.sampled_from(["faq", "markdown"]))
@EXAMPLES
def test_archives(served: tuple[ApiProcess, str, str], body: bytes, fmt: str) -> None:
    send(served, fmt, body)


@example(depth=12, width=12)
@given(depth=st.integers(1, 12), width=st.integers(2, 12))
@EXAMPLES
def test_front_matter(served: tuple[ApiProcess, str, str], depth: int, width: int) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("q.md", aliases(depth, width))
    send(served, "markdown", out.getvalue())


@st.composite
def vendor_json(draw: Any) -> bytes:
    article: dict[str, Any] = {"id": draw(st.integers(1, 10**12)), "title": "T"}
    shape = draw(st.sampled_from(["nested", "wide", "body", "broken"]))
    size = draw(sizes(2_000_000))
    if shape == "nested":
        return b'{"articles": [' + b"[" * min(size, 100_000) + b"]}"
    if shape == "wide":
        article["labels"] = [[]] * size
    elif shape == "body":
        article["body"] = draw(st.sampled_from(["<b>", "<!-- c -->", "<div>", "&amp;"])) * (
            size // 4
        )
    body = json.dumps({"articles": [article]}).encode()
    return body[: -draw(st.integers(1, 5))] if shape == "broken" else body


@example(body=b'{"articles": [' + b"[" * 2_000_000 + b"]}", fmt="zendesk")
@example(
    body=b'{"articles": [{"id": 1, "labels": [' + b"[]," * 2_700_000 + b"[]]}]}", fmt="zendesk"
)
@example(body=b'{"articles": [{"id": 1, "body": "' + b"<b>" * 2_500_000 + b'"}]}', fmt="zendesk")
@example(
    body=b'{"articles": [{"id": 1, "body": "' + b"<!-- c -->" * 900_000 + b'"}]}', fmt="intercom"
)
@given(body=vendor_json(), fmt=st.sampled_from(["zendesk", "intercom"]))
@EXAMPLES
def test_vendor_json(served: tuple[ApiProcess, str, str], body: bytes, fmt: str) -> None:
    send(served, fmt, body)


@st.composite
def csv_files(draw: Any) -> bytes:
    header = b"title,answer,category\n"
    unit = draw(st.sampled_from([b",", b'"', b"\n", b"x", b'"",']))
    count = draw(sizes(3 * 2**20))
    return header + unit * count + draw(st.sampled_from([b"", b'\n"unclosed']))


@example(body=b"title,answer\n" + b"," * 3 * 2**20)
@example(body=b"title,answer\n" + b'"' + b"x" * 8 * 2**20)
@example(body=b"title,answer\n" + b"\n" * 8 * 2**20)
@given(body=csv_files())
@EXAMPLES
def test_csv(served: tuple[ApiProcess, str, str], body: bytes) -> None:
    send(served, "csv", body)


TEMPLATE = st.text(
    alphabet=st.sampled_from(list("%()qscountlimax0123456789.-+ #*drxXa")), max_size=40
)


@example(label="%(q)2000000000s")
@example(label="%(q)s" * 40)
@given(label=TEMPLATE)
@EXAMPLES
def test_label_templates(served: tuple[ApiProcess, str, str], label: str) -> None:
    api, slug, key = served
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    settings_body = {"helpCenter": {"enabled": True, "labels": {"resultsFor": {"en": label}}}}
    status, _, answer = fetch(
        f"{api.base_url}/api/v1/{slug}/settings",
        method="PATCH",
        headers=headers,
        body=json.dumps(settings_body).encode(),
    )
    assert status in (200, 400), (status, answer[:300])
    page = f"{api.base_url}/hc/{slug}/en/search?q=" + "refund" * 30
    seen = api.observe(lambda: fetch(page))
    assert seen.result[0] in (200, 429), seen.result[2][:300]
    assert len(seen.result[2]) < 200_000, len(seen.result[2])
    assert seen.peak_rss_mb - seen.before_rss_mb <= RSS_GROWTH_MB, seen
    assert seen.cheap_max_ms <= CHEAP_MS, seen
