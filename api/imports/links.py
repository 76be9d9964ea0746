"""Links between imported articles (issue 41): a vendor article's link to another article (or
section, category, collection) of the same help center leads, once imported, to that
resource's page in our help center (``/hc/{org}/{locale}/questions/{slug}``).

Where: the converter finds the links in the article's HTML tree (lxml, with the rest of the
conversion) and puts a placeholder in each one's ``href`` (``PLACEHOLDER``, a URL no link of
a source has); the item carries ``(placeholder, original href, target)``. The writer puts a
URL in every placeholder before anything is written (no placeholder is ever stored): the
target's page when the target is imported already, else the original href. A link whose
target comes later in the file is rewritten after the last batch (``Relinker``); one whose
target is nowhere is kept and reported as a warning of its item.

The vendors' article URLs (the paths their help centers publish, any host: a custom domain
serves the same paths):
- Zendesk Guide: ``/hc/{locale}/articles/{id}-{title}``, ``/hc/articles/{id}``, and
  ``sections/{id}``, ``categories/{id}`` alike.
- Intercom: ``/{workspace}/{locale}/articles/{id}-{title}``, ``.../collections/{id}-...``.
- Help Scout Docs: ``/article/{number}-{slug}`` (the article's ``number``, not its id).
- A zip of Markdown files: a relative link to another ``.md`` file of the zip
  (``../Billing/pay.md#fees``), found by markdown-it-py's parser (the placeholder put in
  the destination as written: ``](dest)``, ``](<dest>)``, ``[ref]: dest``).
"""

from __future__ import annotations

import posixpath
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import quote, unquote, urlsplit

from markdown_it import MarkdownIt

PLACEHOLDER_HOST = "import-link.invalid"  # .invalid: RFC 2606, no real link has it
MAX_HREF = 2000  # characters of an href looked at (a longer one is no article's URL)
# A destination written back as it was: characters Markdown would read as its end (space,
# parentheses, angle brackets) percent-encoded, escapes kept.
_DESTINATION_SAFE = "!#$%&'*+,-./:;=?@[]^_`{|}~"

_ID = re.compile(r"(\d+)(?:-.*)?")  # an id, then optionally "-" and the title's words


@dataclass(frozen=True)
class Target:
    kind: str  # question | category
    ref_kind: str  # the ``external_refs`` kind it is known by (question, category, link)
    source: str  # its external id there


class Link(NamedTuple):
    """A link of an item's body to an imported resource, its href a placeholder until the
    writer puts a URL there."""

    placeholder: str
    href: str  # as the source wrote it
    target: Target
    fragment: str


def _id_after(parts: list[str], names: tuple[str, ...]) -> tuple[str, str] | None:
    """The name and id of the last ``{name}/{id}[-words]`` pair of the path's segments."""
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in names:
            match = _ID.fullmatch(parts[i + 1])
            if match:
                return parts[i], match.group(1)
            return None
    return None


def _zendesk(parts: list[str]) -> Target | None:
    if "hc" not in parts:
        return None
    found = _id_after(parts[parts.index("hc") :], ("articles", "sections", "categories"))
    if found is None:
        return None
    name, ident = found
    if name == "articles":
        return Target("question", "question", f"zendesk:{ident}")
    kind = "section" if name == "sections" else "category"
    return Target("category", "category", f"zendesk:{kind}:{ident}")


def _intercom(parts: list[str]) -> Target | None:
    found = _id_after(parts, ("articles", "collections"))
    if found is None:
        return None
    name, ident = found
    if name == "articles":
        return Target("question", "question", f"intercom:{ident}")
    return Target("category", "category", f"intercom:collection:{ident}")


def helpscout_number(number: object) -> str:
    """The key a Help Scout article is linked by (``external_refs`` kind ``link``)."""
    return f"helpscout:article:{number}"


def _helpscout(parts: list[str]) -> Target | None:
    found = _id_after(parts, ("article",))
    if found is None:
        return None
    return Target("question", "link", helpscout_number(found[1]))


RULES: dict[str, Callable[[list[str]], Target | None]] = {
    "zendesk": _zendesk,
    "intercom": _intercom,
    "helpscout": _helpscout,
}


def target_of(rules: str, href: str) -> tuple[Target, str] | None:
    """The imported resource ``href`` names under the format's ``rules``, and its fragment
    (``#step-2``, kept); None when it names none (another site, an attachment, a mail)."""
    rule = RULES.get(rules)
    if rule is None or len(href) > MAX_HREF:
        return None
    try:
        url = urlsplit(href.strip())
    except ValueError:
        return None
    if url.scheme not in ("http", "https", "") or (not url.scheme and not url.path.startswith("/")):
        return None
    found = rule([p for p in url.path.split("/") if p])
    if found is None:
        return None
    return found, url.fragment


def new_placeholder_prefix() -> str:
    """A prefix of the placeholders of one body (its nonce: no text of a source holds it)."""
    return f"https://{PLACEHOLDER_HOST}/{secrets.token_hex(6)}/"


def destination(href: str) -> str:
    """``href`` as a Markdown link destination (what would end it percent-encoded)."""
    return quote(href.strip(), safe=_DESTINATION_SAFE)


def page_url(org_slug: str, locale: str, kind: str, slug: str, fragment: str) -> str:
    """The help-center page of an imported question or category."""
    section = "questions" if kind == "question" else "categories"
    url = f"/hc/{org_slug}/{locale}/{section}/{slug}"
    return f"{url}#{fragment}" if fragment else url


def kept_issue(href: str) -> str:
    return f"link to {href[:300]} kept: its target was not imported"


def markdown_file_key(path: str) -> str:
    """The key a Markdown file of a zip is linked by (``external_refs`` kind ``link``): its
    path without ``.md``, whatever ``externalId`` its front matter gives it."""
    return f"markdown:{path.removesuffix('.md')}"


def _markdown_target(path: str, href: str) -> tuple[Target, str] | None:
    """The file of the zip a relative link of the file ``path`` names, and its fragment."""
    if len(href) > MAX_HREF:
        return None
    try:
        url = urlsplit(href)
    except ValueError:
        return None
    if url.scheme or url.netloc or not url.path.lower().endswith(".md"):
        return None
    linked = unquote(url.path)
    base = "" if linked.startswith("/") else posixpath.dirname(path)
    resolved = posixpath.normpath(posixpath.join(base, linked.lstrip("/")))
    if resolved.startswith("../") or resolved == "..":
        return None
    return Target("question", "link", markdown_file_key(resolved)), url.fragment


def markdown_links(markdown: str, path: str) -> tuple[str, list[Link]]:
    """``markdown`` (the file ``path`` of a zip) with a placeholder in each link to another
    Markdown file of the zip, and those links."""
    if "](" not in markdown and "]:" not in markdown:
        return markdown, []
    hrefs: set[str] = set()
    for token in MarkdownIt("commonmark").parse(markdown):
        for child in token.children or []:
            href = child.attrGet("href") if child.type == "link_open" else None
            if isinstance(href, str):
                hrefs.add(href)
    links: list[Link] = []
    prefix = ""
    markdown += "\n"  # a definition on the last line ends as the others do
    for href in sorted(hrefs):
        found = _markdown_target(path, href)
        if found is None:
            continue
        prefix = prefix or new_placeholder_prefix()
        placeholder = f"{prefix}{len(links)}"
        changed = markdown
        for written in {href, unquote(href)}:
            for before, after in (
                (f"]({written})", f"]({placeholder})"),
                (f"]({written} ", f"]({placeholder} "),
                (f"](<{written}>", f"]({placeholder}"),
                (f"]: {written}\n", f"]: {placeholder}\n"),
                (f"]: {written} ", f"]: {placeholder} "),
                (f"]: <{written}>", f"]: {placeholder}"),
            ):
                changed = changed.replace(before, after)
        if changed != markdown:
            markdown = changed
            links.append(Link(placeholder, href, *found))
    return markdown[:-1], links
