"""``GET /hc/widget.js``: the FAQ widget for an org's own site (issue 41), one script.

- The script (``static/widget.js``) defines ``<faq-widget>`` (a custom element with a shadow
  root, no framework, nothing loaded from another host); its labels, in every language that
  has a catalog, are put in it once per process (``SCRIPT``): the help center's own labels
  (``api.helpcenter.i18n``: "Was this helpful?", the result count…) and the widget's
  (``WIDGET_LABELS``, translated in ``locales/{lang}/LC_MESSAGES/widget.po``). A language
  without a translation of a label shows it in English, label by label.
- Cached: ``/hc/widget.js`` for an hour then revalidated (``ETag``: the digest of its bytes;
  ``If-None-Match`` gets 304), ``/hc/widget.js?v={VERSION}`` (the current digest) for a year,
  immutable. Another ``v`` is served like the plain URL (an older page keeps working).
- Loadable by a page of any origin: ``Access-Control-Allow-Origin: *`` (a ``<script
  type="module">`` or ``crossorigin`` fetches it with CORS) and ``Cross-Origin-Resource-
  Policy: cross-origin`` (a page that isolates itself may still load it). It sends no cookie
  and reads none: the publishable key in its attributes is its only credential.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from babel.messages.pofile import read_po
from quart import Blueprint, Response, request

from api.helpcenter.i18n import CATALOGS, LABELS, LOCALES_DIR, translated

SOURCE = Path(__file__).parent / "static" / "widget.js"
DOMAIN = "widget"
MARKER = "/*LABELS*/ {}"
# The help center's labels the widget shows (keys of ``LABELS``).
HELP_CENTER_KEYS = (
    "searchLabel",
    "wasThisHelpful",
    "yes",
    "no",
    "thanks",
    "resultCount",
    "noResults",
)
# The widget's own, by the English text it shows (msgids of ``widget.po``).
WIDGET_LABELS = (
    "Help",
    "Close",
    "Type your question",
    "Best answer",
    "Read the full answer",
    "Your vote was not recorded. Please try again.",
    "This help widget is not set up: it needs %(attribute)s.",
    "This help widget cannot use a secret key. Use the organization's publishable key (faq_pk_…).",
    "The help service could not be reached, or does not accept this site, organization or key.",
    "Too many requests. Please wait a moment and try again.",
)
HOUR = "public, max-age=3600"
FOREVER = "public, max-age=31536000, immutable"
JAVASCRIPT = "text/javascript; charset=utf-8"

widget = Blueprint("hc_widget", __name__)


def _widget_catalog(language: str) -> dict[str, str]:
    path = LOCALES_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"
    if not path.exists():
        return {}
    with path.open("rb") as po:
        parsed = read_po(po, domain=DOMAIN)
    return {
        str(m.id): str(m.string)
        for m in parsed
        if isinstance(m.id, str) and m.id in WIDGET_LABELS and m.string and not m.fuzzy
    }


def labels_by_language() -> dict[str, dict[str, str]]:
    """``{language: {English text: translation}}`` of every language with a catalog of the
    help center or of the widget; an untranslated label is left out (English shows)."""
    languages = set(CATALOGS) | {
        p.parent.parent.name for p in LOCALES_DIR.glob("*/LC_MESSAGES/widget.po")
    }
    out: dict[str, dict[str, str]] = {}
    for language in sorted(languages):
        tag = language.replace("_", "-").lower()
        texts = _widget_catalog(language)
        for key in HELP_CENTER_KEYS:
            english = LABELS.get(key)
            found = translated(tag, english) if english is not None else None
            if english is not None and found is not None:
                texts[english] = found
        if texts:
            out[tag] = texts
    return out


def build_script() -> bytes:
    source = SOURCE.read_text(encoding="utf-8")
    if MARKER not in source:
        raise RuntimeError(f"{SOURCE} lost its labels marker {MARKER!r}")
    labels = json.dumps(labels_by_language(), ensure_ascii=False, sort_keys=True)
    # ``</`` cannot end a script that is ever inlined; a label holds no code either way.
    return source.replace(MARKER, labels.replace("</", "<\\/"), 1).encode()


# Read once, when the app is imported: no file is read on the event loop afterwards.
SCRIPT = build_script()
VERSION = hashlib.sha256(SCRIPT).hexdigest()[:16]
ETAG = f'"w-{VERSION}"'


def _matches(header: str | None) -> bool:
    if header is None:
        return False
    return any(tag.strip().removeprefix("W/") in (ETAG, "*") for tag in header.split(","))


@widget.get("/hc/widget.js")
async def widget_script() -> Response:
    """The widget's script, for ``<script src>`` on a page of any origin."""
    headers = {
        "Cache-Control": FOREVER if request.args.get("v") == VERSION else HOUR,
        "ETag": ETAG,
        "Access-Control-Allow-Origin": "*",
        "Cross-Origin-Resource-Policy": "cross-origin",
        "X-Widget-Version": VERSION,
    }
    if _matches(request.headers.get("If-None-Match")):
        return Response("", status=304, headers=headers)
    return Response(SCRIPT, content_type=JAVASCRIPT, headers=headers)
