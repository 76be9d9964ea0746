"""XLIFF 1.2 files of an org's translatable text, written and read with translate-toolkit
(``translate.storage.xliff``): no string templates, and its safe XML parser (no entity
expansion, no network) for what clients send.

One ``<file>`` per source locale (``original="faq-<locale>"``, ``source-language`` that locale,
``target-language`` the requested one); one ``<trans-unit>`` per translatable field, its id
naming the resource and the field: ``question/<id>/title``, ``question/<id>/answer``,
``category/<id>/name``, ``category/<id>/description``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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


def not_xliff(issue: str) -> ValidationFailed:
    return ValidationFailed(
        "The body is not an XLIFF 1.2 document.", details=field_error("body", issue)
    )


def parse_document(body: bytes) -> list[ImportUnit]:
    """Every trans-unit of an XLIFF 1.x document (target language from its ``<file>``).

    Anything translate-toolkit cannot read as XLIFF 1.x (not XML, another root, XLIFF 2, no
    ``<file>``) is 400 ``validation_failed`` on ``body``.
    """
    if not body.strip():
        raise not_xliff("is empty")
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
