"""One line of plain text summing up a Markdown answer (``llms.txt``, issue 41): what a reader
reads first, in clean sentences.

The answer is parsed (markdown-it-py, as the pages render it; raw HTML read with lxml), never
pattern-matched, so markup leaves no trace: link and emphasis text stays in its sentence
("App Store and Google Play.", never "Google Play ."), inline code keeps its text, an image its
alt text. Structure a line cannot hold is skipped or summed up: a table, a code block, a
horizontal rule and a heading are skipped; a list becomes its items' first lines in one
sentence ("Chrome, Firefox, Safari."; items that are sentences already stay sentences). At most
``SUMMARY_CHARS``: cut after the last whole sentence that fits, else at a word, with "…".

The source given may be the start of a longer answer (``cut``): its last block (of a list,
its last item) may be incomplete, and is left out when what comes before says something."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import lxml.html
from lxml import etree
from markdown_it import MarkdownIt
from markdown_it.token import Token

SUMMARY_CHARS = 160
# Full-width (CJK) stops end a sentence with no space after them.
_FULL_WIDTH_END = ("\u3002", "\uff01", "\uff1f")  # ideographic full stop, "!", "?"
SENTENCE_END = (".", "!", "?", "\u2026", "\u061f", "\u0964", *_FULL_WIDTH_END)
_INTRODUCING = (":", "\uff1a")  # and the full-width colon
# Punctuation no language's typography puts a space before (French puts one before "?", "!",
# ":" and ";", so those keep theirs).
_CLOSING = (".", ",", ")", "]", "\u3001", "\u3002", "\u060c")  # and CJK, Arabic commas
_SKIPPED_ELEMENTS = ("table", "pre", "script", "style", "template", "img", "svg", "math")

_parser = MarkdownIt("commonmark", {"html": True, "linkify": False}).enable(
    ["table", "strikethrough"]
)


def summary(answer: str, *, cut: bool = False, limit: int = SUMMARY_CHARS) -> str:
    """One line of plain text from a Markdown answer, at most ``limit`` characters; "" when
    it holds no prose (a table alone, code alone)."""
    tokens = _parser.parse(answer)
    blocks = list(_blocks(tokens))
    if cut:
        complete = list(_blocks(_without_last_part(tokens)))
        blocks = complete if any(complete) else blocks
    kept: list[str] = []
    for n, text in enumerate(blocks):
        if not text:
            continue
        if text.endswith(_INTRODUCING) and not (n + 1 < len(blocks) and blocks[n + 1]):
            # It introduced what is skipped (a table, code): the sentence ends here.
            text = text.rstrip("".join(_INTRODUCING)).rstrip() + "."
        kept.append(text)
    return _shortened(_tidy(" ".join(kept)), limit)


def _blocks(tokens: Sequence[Token]) -> Iterator[str]:
    """The text of each top-level block, in order ("" for one skipped)."""
    i = 0
    while i < len(tokens):
        token = tokens[i]
        end = _closing_index(tokens, i)
        if token.type in ("bullet_list_open", "ordered_list_open"):
            yield _list(tokens[i + 1 : end])
        elif token.type == "blockquote_open":
            yield " ".join(t for t in _blocks(tokens[i + 1 : end]) if t)
        elif token.type == "paragraph_open":
            yield _tidy(_inline(tokens[i + 1]))
        elif token.type == "html_block":
            yield _tidy(_html_text(token.content))
        else:  # headings, tables, code, rules: nothing a one-line summary can use
            yield ""
        i = end + 1


def _without_last_part(tokens: list[Token]) -> list[Token]:
    """The tokens without the last top-level block, which a cut may have left incomplete (a
    link's URL, half a word); of a list, only its last item goes."""
    starts = [i for i, t in enumerate(tokens) if t.level == 0 and t.nesting >= 0]
    if not starts:
        return tokens
    last = starts[-1]
    if tokens[last].type in ("bullet_list_open", "ordered_list_open"):
        items = [
            i
            for i in range(last, len(tokens))
            if tokens[i].type == "list_item_open" and tokens[i].level == 1
        ]
        return tokens[: items[-1]] if items else tokens[:last]
    return tokens[:last]


def _closing_index(tokens: Sequence[Token], start: int) -> int:
    """The index of the token closing the block opened at ``start`` (itself when it opens
    nothing: ``fence``, ``html_block``, ``hr``)."""
    if tokens[start].nesting != 1:
        return start
    depth = 0
    for j in range(start, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


def _list(tokens: Sequence[Token]) -> str:
    """A list as one sentence: its items' first paragraphs (nested lists left out)."""
    items: list[str] = []
    depth = 0
    for j, token in enumerate(tokens):
        if token.type == "list_item_open":
            depth += 1
            if depth == 1:
                text = next(
                    (
                        _inline(tokens[k + 1])
                        for k in range(j + 1, len(tokens))
                        if tokens[k].type == "paragraph_open" and tokens[k].level == token.level + 1
                    ),
                    "",
                )
                if text:
                    items.append(_tidy(text))
        elif token.type == "list_item_close":
            depth -= 1
    if not items:
        return ""
    if all(item.endswith(SENTENCE_END) for item in items):
        return " ".join(items)
    return ", ".join(item.rstrip(",;:") for item in items) + "."


def _inline(token: Token) -> str:
    """The plain text of an inline token: text, code, link text and image alt text; line
    breaks are spaces, markup and raw HTML tags nothing, struck-out text left out."""
    parts: list[str] = []
    struck = 0
    for child in token.children or ():
        if child.type in ("s_open", "s_close"):
            struck += child.nesting
        elif struck:
            continue
        elif child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type == "image":
            parts.append(_inline(child))
        elif child.type in ("softbreak", "hardbreak") or _is_break(child):
            parts.append(" ")
    return "".join(parts)


def _is_break(token: Token) -> bool:
    return token.type == "html_inline" and token.content[:3].lower() == "<br"


def _html_text(source: str) -> str:
    """The text of a raw HTML block, without what a line cannot hold (tables, code)."""
    try:
        root = lxml.html.fragment_fromstring(source, create_parent="div")
    except (etree.ParserError, ValueError):
        return ""
    for element in root.iter(*_SKIPPED_ELEMENTS):
        element.drop_tree()
    for br in root.iter("br"):
        br.tail = " " + (br.tail or "")
    return str(root.text_content())


def _tidy(text: str) -> str:
    """Whitespace collapsed, and none before closing punctuation."""
    words = text.split()
    out: list[str] = []
    for word in words:
        if out and word.startswith(_CLOSING) and not _starts_a_word(word):
            out[-1] += word
        else:
            out.append(word)
    return " ".join(out)


def _starts_a_word(word: str) -> bool:
    """``.NET``, ``.env``, ``...more``: a dot that begins a word is no closing punctuation."""
    return word[0] == "." and len(word) > 1 and word[1].isalnum()


def _shortened(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = text[:limit]
    # The last whole sentence that fits, when it says enough (a third of the room).
    ends = [i for i, ch in enumerate(head) if ch in SENTENCE_END and _ends_sentence(text, i)]
    if ends and ends[-1] + 1 >= limit // 3:
        return head[: ends[-1] + 1]
    room = text[: limit - 1]
    word = room.rsplit(" ", 1)[0] if " " in room else room
    return word.rstrip(",;:") + "…"


def _ends_sentence(text: str, i: int) -> bool:
    """The punctuation at ``i`` ends a sentence: followed by a space or the end (a full-width
    one always)."""
    return text[i] in _FULL_WIDTH_END or i + 1 == len(text) or text[i + 1] == " "
