"""Vendor HTML to Markdown: what converts, and what is removed and reported (never dropped
silently)."""

from __future__ import annotations

from api.imports.html import to_markdown


def test_structure_converts_to_markdown() -> None:
    markdown, issues = to_markdown(
        "<h2>Cards &amp; transfers</h2><p>Open <strong>Billing</strong> &rarr; <em>Cards</em>"
        ' and <a href="https://acme.test/b">replace</a> it&nbsp;&mdash; &euro;5.</p>'
        "<ol><li>One</li><li>Two<ul><li>Nested</li></ul></li></ol>"
        "<blockquote><p>Quoted</p></blockquote><p>line<br>break</p>"
        "<pre><code>curl https://api.acme.test/pay\n</code></pre>"
        '<p><img src="https://acme.test/c.png" alt="Card form"></p>'
    )
    assert issues == []
    assert markdown.startswith("## Cards & transfers\n\n")
    assert "Open **Billing** → *Cards* and [replace](https://acme.test/b) it\xa0— €5." in markdown
    assert "1. One\n2. Two\n   - Nested" in markdown
    assert "> Quoted" in markdown
    assert "```\ncurl https://api.acme.test/pay\n```" in markdown
    assert "![Card form](https://acme.test/c.png)" in markdown
    assert "\n\n\n" not in markdown and markdown == markdown.strip()


def test_tables_keep_their_cells() -> None:
    markdown, issues = to_markdown(
        "<table><thead><tr><th>Method</th><th>Fee</th></tr></thead>"
        "<tbody><tr><td>Card</td><td>1 | 2 %</td></tr></tbody></table>"
    )
    assert issues == []
    lines = [line.replace(" ", "") for line in markdown.splitlines()]
    assert lines[0] == "|Method|Fee|" and set(lines[1]) <= {"|", "-", ":"}
    assert lines[2] == r"|Card|1\|2%|"


def test_unrepresentable_content_is_removed_and_counted() -> None:
    markdown, issues = to_markdown(
        '<p>Watch<iframe src="https://www.youtube.com/embed/x"></iframe> this.</p>'
        "<script>alert('x')</script><style>p{color:red}</style>"
        '<video src="a.mp4"></video><video src="b.mp4"></video>'
        "<form><input name=q><button>Go</button></form>"
        "<svg><script>nested()</script></svg><p>After</p>"
    )
    assert "youtube" not in markdown and "alert" not in markdown and "color" not in markdown
    assert "mp4" not in markdown and "Go" not in markdown and "nested" not in markdown
    assert "Watch this." in markdown and "After" in markdown
    assert "<iframe> removed (1): Markdown cannot hold it" in issues
    assert "<script> removed (1): Markdown cannot hold it" in issues  # the svg's went with it
    assert "<video> removed (2): Markdown cannot hold it" in issues
    assert "<form> removed (1): Markdown cannot hold it" in issues
    assert "<svg> removed (1): Markdown cannot hold it" in issues
    assert not any("<input>" in i or "<button>" in i for i in issues)  # inside the form


def test_spanning_cells_are_flattened_and_reported() -> None:
    markdown, issues = to_markdown(
        '<table><tr><th colspan="2">Plans</th></tr><tr><td rowspan="2">A</td><td>1</td></tr>'
        "<tr><td>2</td></tr></table>"
    )
    assert "Plans" in markdown and "A" in markdown
    assert issues == ["table cells spanning rows or columns (2) flattened"]


def test_empty_and_plain_text_bodies() -> None:
    assert to_markdown("") == ("", [])
    assert to_markdown("   \n ") == ("", [])
    assert to_markdown("Just text, no tags") == ("Just text, no tags", [])
    markdown, _ = to_markdown("<html><head><title>T</title></head><body><p>Body</p></body></html>")
    assert markdown.endswith("Body")


def test_bodies_converted_ahead_in_batches_come_back_in_order_with_their_notes() -> None:
    """The parser's bodies go to the converter processes a batch at a time (fewer messages
    than bodies); each item gets its own Markdown and its own notes, in order, also for the
    batch still open when the items run out."""
    from api.imports import context as contexts
    from api.imports.items import QuestionItem

    context = contexts.ParseContext("en", 2**30, ahead=True)
    count = contexts.CONVERT_BATCH * 2 + 3
    items = []
    for n in range(count):
        notes: list[contexts.Note] = []
        html = f"<p>Body <strong>{n}</strong></p>" + ("<iframe></iframe>" if n % 5 == 0 else "")
        answer = context.markdown(html, f"item-{n}", "answer", notes)
        items.append(QuestionItem(f"item-{n}", f"T{n}", answer, "published", notes=notes))
    assert context.batches_sent() < count
    done = list(context.resolved(iter(items)))
    assert [item.answer for item in done] == [f"Body **{n}**" for n in range(count)]
    for n, item in enumerate(done):
        issues = [note.issue for note in item.notes]
        assert issues == (["<iframe> removed (1): Markdown cannot hold it"] if n % 5 == 0 else [])
    assert context.pending == {}
