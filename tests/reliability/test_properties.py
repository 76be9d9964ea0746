"""Property-based tests of the dense logic: slugs, cursors, JSON depth."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from api.app import _too_deep
from api.errors import ValidationErrorCode, ValidationFailed
from api.http.pagination import CursorCodec
from api.slugs import SLUG_RE, is_valid_slug, slugify, with_suffix

codec = CursorCodec("property-test-secret")


@given(st.text(max_size=300))
def test_slugify_always_yields_a_valid_bounded_slug(text: str) -> None:
    slug = slugify(text, 100)
    assert SLUG_RE.fullmatch(slug)
    assert 1 <= len(slug) <= 100


@given(st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=50))
def test_slugify_keeps_plain_words(word: str) -> None:
    assert slugify(word, 100) == word


@given(st.text(max_size=120), st.integers(min_value=1, max_value=10_000))
def test_suffixes_stay_valid_and_within_length(text: str, n: int) -> None:
    slug = with_suffix(slugify(text, 100), n, 100)
    assert is_valid_slug(slug, 100)
    if n > 1:
        assert slug.endswith(f"-{n}")


@given(
    st.lists(st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=30)), max_size=3)
)
def test_cursor_round_trips(key: list[object]) -> None:
    assert codec.decode("questions", codec.encode("questions", key)) == key


@settings(max_examples=200)
@given(st.lists(st.integers(), min_size=1, max_size=3), st.integers(min_value=0), st.characters())
def test_altered_cursor_is_refused(key: list[int], position: int, char: str) -> None:
    cursor = codec.encode("categories", key)
    index = position % len(cursor)
    if cursor[index] == char:
        return
    altered = cursor[:index] + char + cursor[index + 1 :]
    with pytest.raises(ValidationFailed):
        codec.decode("categories", altered)


def test_cursors_survive_a_key_rotation() -> None:
    old = CursorCodec("old-key")
    rotating = CursorCodec("new-key", "old-key")
    cursor = old.encode("categories", [3, "cat_x"])
    assert rotating.decode("categories", cursor) == [3, "cat_x"]
    fresh = rotating.encode("categories", [4, "cat_y"])
    assert CursorCodec("new-key").decode("categories", fresh) == [4, "cat_y"]
    with pytest.raises(ValidationFailed):
        old.decode("categories", fresh)


def test_cursor_of_another_list_or_secret_is_refused() -> None:
    cursor = codec.encode("categories", [1, "cat_x"])
    with pytest.raises(ValidationFailed):
        codec.decode("questions", cursor)
    with pytest.raises(ValidationErrorCode):
        CursorCodec("another-secret").decode("categories", cursor, error=ValidationErrorCode)


@given(st.integers(min_value=0, max_value=200))
def test_json_depth_guard(depth: int) -> None:
    body = ("[" * depth + "]" * depth).encode()
    assert _too_deep(body) is (depth > 32)
    quoted = ('{"a": "' + "[" * depth + '"}').encode()
    assert _too_deep(quoted) is False
