"""XLIFF 1.2 files of an org's translatable text, written and read with translate-toolkit
(``translate.storage.xliff``): no string templates.

One ``<file>`` per source locale (``original="faq-<locale>"``, ``source-language`` that locale,
``target-language`` the requested one); one ``<trans-unit>`` per translatable field, its id
naming the resource and the field: ``question/<id>/title``, ``question/<id>/answer``,
``category/<id>/name``, ``category/<id>/description``.

Written in pieces (``frame``, ``units_xml``) so an export streams a batch at a time: the pieces
put together are ``build_document``'s bytes. Read only when the document has no DOCTYPE
(defusedxml, before translate-toolkit sees it): a DTD is where entities are declared, and
translate-toolkit's parser, although it does not resolve them into the tree, hands their
replacement text out as a unit's target (a 600-byte body made a 100,000-character target).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from xml.etree.ElementTree import ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser
from translate.storage import xliff

from tenancy.errors import ValidationFailed, field_error

NAMESPACE = "urn:oasis:names:tc:xliff:document:1.2"
MEDIA_TYPE = "application/xliff+xml"
FILE_PREFIX = "faq-"
FIELDS = {"question": ("title", "answer"), "category": ("name", "description")}

# The target's XLIFF state: a published question translation is final, a draft (and a category
# translation, which has no status) translated, any translation whose source changed since it
# was written (outdated) needs review.
STATE_FINAL = "final"
STATE_TRANSLATED = "translated"
STATE_OUTDATED = "needs-review-translation"


class Xliff12Unit(xliff.xliffunit):  # type: ignore[misc,type-arg]
    namespace = NAMESPACE


class Xliff12File(xliff.xlifffile):  # type: ignore[misc,type-arg]
    """translate-toolkit's XLIFF store, with version 1.2 (its skeleton says 1.1)."""

    UnitClass = Xliff12Unit
    namespace = NAMESPACE
    XMLskeleton = f"""<?xml version="1.0" ?>
<xliff version="1.2" xmlns="{NAMESPACE}">
<file original="NoName" source-language="en" datatype="plaintext">
<body>
</body>
</file>
</xliff>"""


@dataclass(frozen=True)
class ExportUnit:
    kind: str  # "question" | "category"
    resource_id: str
    field: str
    source: str
    target: str | None = None
    state: str | None = None
    note: str | None = None

    @property
    def unit_id(self) -> str:
        return f"{self.kind}/{self.resource_id}/{self.field}"


@dataclass(frozen=True)
class ImportUnit:
    unit_id: str
    target_language: str | None  # as the file wrote it (not yet checked)
    target: str | None


class XliffBuilder:
    """Units added per source locale, then ``bytes()`` of the whole document."""

    def __init__(self, target_locale: str) -> None:
        self.target_locale = target_locale
        self.store: Any = Xliff12File()  # translate-toolkit is untyped
        self.files: set[str] = set()

    def _switch(self, source_locale: str) -> None:
        name = FILE_PREFIX + source_locale
        self.store.switchfile(name, createifmissing=True)
        if name not in self.files:
            self.files.add(name)
            node = self.store.getfilenode(name)
            node.set("source-language", source_locale)
            node.set("target-language", self.target_locale)

    def add(self, source_locale: str, unit: ExportUnit) -> None:
        self._switch(source_locale)
        xml_unit = self.store.UnitClass(unit.source)
        xml_unit.setid(unit.unit_id)
        self.store.addunit(xml_unit)
        if unit.target is not None:
            xml_unit.settarget(unit.target, lang=self.target_locale)
            xml_unit.set_state_n(xml_unit.statemap[unit.state or STATE_TRANSLATED])
        if unit.note:
            xml_unit.addnote(unit.note, origin="developer")

    def document(self, default_source_locale: str) -> bytes:
        if not self.files:  # nothing to translate: one empty <file>, still a valid document
            self._switch(default_source_locale)
        return bytes(self.store)


def build_document(
    target_locale: str, default_source_locale: str, units: Iterable[tuple[str, ExportUnit]]
) -> bytes:
    """The XLIFF 1.2 document of ``(source locale, unit)`` pairs."""
    builder = XliffBuilder(target_locale)
    for source_locale, unit in units:
        builder.add(source_locale, unit)
    return builder.document(default_source_locale)


# What surrounds the units of a ``<body>`` in translate-toolkit's indented serialisation.
_BODY_OPEN = b"<body>\n"
_BODY_CLOSE = b"    </body>\n"
_MARKER = ExportUnit("frame", "marker", "unit", "-")  # stands for a file's units in ``frame``


def units_xml(target_locale: str, units: Sequence[ExportUnit]) -> bytes:
    """The ``<trans-unit>`` elements of ``units`` as ``build_document`` writes them inside a
    ``<body>`` (indented, one after the other): a batch of an export (at least one unit)."""
    builder = XliffBuilder(target_locale)
    for unit in units:
        builder.add(target_locale, unit)  # the file's locale is not in its units
    document = bytes(builder.store)
    # Text and attribute values are escaped: these two are the body's own tags.
    start = document.index(_BODY_OPEN) + len(_BODY_OPEN)
    return document[start : document.rindex(_BODY_CLOSE)]


def frame(target_locale: str, source_locales: Sequence[str]) -> list[bytes]:
    """``build_document``'s bytes around the units of each file, one ``<file>`` per source
    locale (in that order, at least one): ``pieces[0]``, the first file's units,
    ``pieces[1]``, the second's, ..., ``pieces[-1]``."""
    builder = XliffBuilder(target_locale)
    for locale in source_locales:
        builder.add(locale, _MARKER)
    return bytes(builder.store).split(units_xml(target_locale, [_MARKER]))


def not_xliff(issue: str) -> ValidationFailed:
    return ValidationFailed(
        "The body is not an XLIFF 1.2 document.", details=field_error("body", issue)
    )


class _RootReached(Exception):
    """The prolog is over: a DOCTYPE can only come before the root element."""


class _StopAtRoot:
    """The target of the prolog's parser: stops it at the root's start tag."""

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        raise _RootReached

    def close(self) -> None:
        return None


def refuse_doctype(body: bytes) -> None:
    """400 when the document has a DOCTYPE (or is not XML up to its root element). Reads the
    prolog only, with defusedxml (``forbid_dtd``): nothing past the root's start tag."""
    parser: Any = DefusedXMLParser(target=_StopAtRoot(), forbid_dtd=True)  # defusedxml is untyped
    try:
        parser.feed(body)
        parser.close()  # no root element at all
    except _RootReached:
        return
    except DefusedXmlException:
        raise not_xliff("has a DOCTYPE: DTDs and entities are not accepted") from None
    except ParseError:
        raise not_xliff("is not well-formed XLIFF") from None
    raise not_xliff("is not well-formed XLIFF")


def parse_document(body: bytes) -> list[ImportUnit]:
    """Every trans-unit of an XLIFF 1.x document (target language from its ``<file>``).

    A document with a DOCTYPE, or anything translate-toolkit cannot read as XLIFF 1.x (not
    XML, another root, XLIFF 2, no ``<file>``) is 400 ``validation_failed`` on ``body``.
    CPU-bound (about 0.8 s per MiB): callers on an event loop run it in a thread.
    """
    if not body.strip():
        raise not_xliff("is empty")
    refuse_doctype(body)
    try:
        parse: Any = Xliff12File.parsestring  # translate-toolkit is untyped
        store = parse(body)
    except ValueError as error:  # XLIFF 2.x, a bad id, an unreadable document
        message = str(error)
        if "XLIFF 2" in message:
            raise not_xliff("XLIFF 2 is not supported: send XLIFF 1.2") from None
        raise not_xliff("is not well-formed XLIFF") from None
    except Exception:
        raise not_xliff("is not well-formed XLIFF") from None
    units = []
    for unit in store.units:
        file_node = next(unit.xmlelement.iterancestors(store.namespaced("file")), None)
        language = file_node.get("target-language") if file_node is not None else None
        local_id = unit.getid().rpartition("\x04")[2]
        target = unit.target
        units.append(ImportUnit(local_id, language, str(target) if target is not None else None))
    return units
