"""A docstring as an OpenAPI summary (its first whole sentence, plain text) and description
(the rest, Markdown): issue 32's summaries cut mid-sentence ("…Also readable with a") and
raw double backticks."""

from __future__ import annotations

import pytest

from api.http.openapi_text import first_sentence, summary_and_description


@pytest.mark.parametrize(
    ("docstring", "summary", "description"),
    [
        (
            """List categories, by order then id; with q, best match first. Also readable with a
            publishable key.""",
            "List categories, by order then id; with q, best match first.",
            "Also readable with a publishable key.",
        ),
        (
            """Get a category, served in ``?locale=`` (else Accept-Language). Also
            readable with a publishable key.""",
            "Get a category, served in ?locale= (else Accept-Language).",
            "Also readable with a publishable key.",
        ),
        (
            """Receive a Stripe event (signed with Stripe-Signature; no API key).

            Handled: ``checkout.session.completed``. Other types are ignored.""",
            "Receive a Stripe event (signed with Stripe-Signature; no API key).",
            "Handled: `checkout.session.completed`. Other types are ignored.",
        ),
        (
            'Send a synthetic ping (``event: "ping"``).',
            'Send a synthetic ping (event: "ping").',
            "",
        ),
        (
            """Filter by locale, e.g. ``fr``, i.e. one tag. Then the rest.""",
            "Filter by locale, e.g. fr, i.e. one tag.",
            "Then the rest.",
        ),
        (
            """Give the listed categories orders 0, 1, 2… (all or nothing).""",
            "Give the listed categories orders 0, 1, 2… (all or nothing).",
            "",
        ),
        (
            """Read ``a. B`` literally, not as two sentences. Second.""",
            "Read a. B literally, not as two sentences.",
            "Second.",
        ),
        (
            """A list follows.

            - one ``x``
            - two""",
            "A list follows.",
            "- one `x`\n- two",
        ),
    ],
)
def test_summary_is_the_first_whole_sentence_and_the_rest_is_markdown(
    docstring: str, summary: str, description: str
) -> None:
    assert summary_and_description(docstring) == (summary, description)


def test_a_paragraph_without_a_sentence_end_is_one_sentence() -> None:
    assert first_sentence("No full stop here") == ("No full stop here", "")
    assert first_sentence("What is it? A test.") == ("What is it?", "A test.")
