"""The one-line summaries of ``llms.txt`` (issue 41): clean sentences from Markdown answers,
markup parsed away (no stray space before punctuation), tables and code skipped, lists summed
up in a sentence, raw HTML read as text, bounded at ``SUMMARY_CHARS``."""

from __future__ import annotations

import pytest

from api.helpcenter.summaries import SUMMARY_CHARS, summary


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # Links and emphasis leave their text in the sentence, nothing else.
        (
            "Get it on the [App Store](https://apps.apple.com/app/1) and "
            "**[Google Play](https://play.google.com/store)**.",
            "Get it on the App Store and Google Play.",
        ),
        ("Tap *Save* , then **Done** .", "Tap Save, then Done."),
        ("See [the guide](https://x.example/a_b) (*PDF*) .", "See the guide (PDF)."),
        ("Tap ![the gear icon](/gear.png).", "Tap the gear icon."),
        ("Costs ~~$10~~ $8 a month.", "Costs $8 a month."),
        ("Line one<br>line two.", "Line one line two."),
        ("Press <kbd>Ctrl</kbd> + <kbd>S</kbd>.", "Press Ctrl + S."),
        ("Fish &amp; chips \\*daily\\*.", "Fish & chips *daily*."),
        # Code: inline code keeps its text; a block is skipped, its introduction ends.
        ("Run `faq dev` in a terminal.", "Run faq dev in a terminal."),
        (
            "Run this in a terminal:\n\n```sh\nmake run PLAN=PRO\n```\n\nThen open the docs.",
            "Run this in a terminal. Then open the docs.",
        ),
        ("Indented code:\n\n    rm -rf /\n", "Indented code."),
        # Tables: skipped.
        (
            "Supported browsers:\n\n| Browser | Desktop | Mobile |\n|---|---|---|\n"
            "| Chrome | yes | yes |\n| Safari | yes | no |\n\nKeep yours up to date.",
            "Supported browsers. Keep yours up to date.",
        ),
        ("| Browser | Desktop | Mobile |\n| --- | --- | --- |\n| Chrome | yes | no |", ""),
        # Lists: one sentence of their items; items that are sentences stay sentences.
        (
            "You can pay by:\n\n- card\n- bank transfer;\n- PayPal\n",
            "You can pay by: card, bank transfer, PayPal.",
        ),
        ("1. Open **Settings**.\n2. Tap *Billing*.\n", "Open Settings. Tap Billing."),
        ("- Chrome\n  - version 120 or later\n- Firefox\n", "Chrome, Firefox."),
        ("* [Android](https://a.example)\n* [iOS](https://i.example)", "Android, iOS."),
        # Headings, rules: skipped; quotes and raw HTML blocks: their text.
        ("## Refunds\n\nWe refund within 14 days.\n\n---\n", "We refund within 14 days."),
        ("> Prices include VAT.", "Prices include VAT."),
        (
            "<div><p>Call us at <b>555 0100</b>.</p><table><tr><td>Mon</td></tr></table></div>\n",
            "Call us at 555 0100.",
        ),
        # Other languages' punctuation is theirs.
        ("Comment payer ? Par **carte** !", "Comment payer ? Par carte !"),
        ("Installez le SDK .NET , puis redémarrez.", "Installez le SDK .NET, puis redémarrez."),
        ("هل تشحنون إلى **الخارج**؟ نعم.", "هل تشحنون إلى الخارج؟ نعم."),
    ],
)
def test_a_summary_is_clean_sentences(answer: str, expected: str) -> None:
    assert summary(answer) == expected


def test_a_long_answer_is_cut_after_a_sentence_else_at_a_word() -> None:
    sentences = "Refunds reach your card within five working days of the return. " * 5
    cut = summary(sentences)
    assert len(cut) <= SUMMARY_CHARS and cut.endswith("return.")
    assert cut.count("Refunds") == 2
    words = summary("word " * 100)
    assert len(words) <= SUMMARY_CHARS and words.endswith("word…")
    japanese = summary("お支払いはカードでできます。" * 20)
    assert len(japanese) <= SUMMARY_CHARS and japanese.endswith("。")


def test_the_end_of_a_cut_source_is_left_out() -> None:
    """A source cut at a length (llms.txt reads the start of each answer) may end inside a
    link or an item: that part is left out when something comes before it."""
    assert summary("Intro.\n\nSee the [App Store](https://apps.app", cut=True) == "Intro."
    assert summary("Pay by:\n\n- card\n- bank transfer\n- Pay", cut=True) == (
        "Pay by: card, bank transfer."
    )
    assert summary("A single paragraph cut in the midd", cut=True) == (
        "A single paragraph cut in the midd"
    )
    assert summary("Intro.\n\nSee the [App Store](https://apps.app") == (
        "Intro. See the [App Store](https://apps.app"
    )
