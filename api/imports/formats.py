"""The formats an import reads: each one's parser and the ``Content-Type`` it arrives as."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from api.imports import bundle, helpscout, intercom, markdown_zip, tabular, zendesk
from api.imports.context import ParseContext
from api.imports.items import Item

JSON = frozenset({"application/json"})
CSV = frozenset({"text/csv", "application/csv", "text/plain"})
ZIP = frozenset({"application/zip", "application/x-zip-compressed"})


@dataclass(frozen=True)
class Format:
    name: str
    parse: Callable[[BinaryIO, ParseContext], Iterator[Item]]
    media_types: frozenset[str]


FORMATS = {
    f.name: f
    for f in (
        Format("zendesk", zendesk.parse, JSON),
        Format("intercom", intercom.parse, JSON),
        Format("helpscout", helpscout.parse, JSON),
        Format("csv", tabular.parse, CSV),
        Format("markdown", markdown_zip.parse, ZIP),
        Format("faq", bundle.parse, ZIP),
    )
}
