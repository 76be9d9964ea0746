"""The help center's labels in the visitor's language (issue 32).

Every label of the pages is an English gettext message (``LABELS``: a stable key, which an
org's ``helpCenter.labels`` override names, and its English text, the msgid). The
translations are gettext catalogs, one per language, in ``api/helpcenter/locales/{lang}/
LC_MESSAGES/hc.po``: read with Babel and compiled to ``.mo`` in memory once per process, at
import (``CATALOGS``; nothing is downloaded, nothing is written at run time).

A page's label (``Labels``), per label, never per page: the org's override in the page's
locale (else in its language: ``fr`` for ``fr-CA``), else the catalog of the locale (else of
its language), else English. A template calls ``_("Search the help center")``, with
``%(name)s`` placeholders filled by keyword (``_("Results for “%(q)s”", q=q)``): the result
is escaped text unless it came back as ``Markup``.

A label is a template an org may write (issue 42), so it is never given to Python's ``%``
operator: ``substitute`` replaces only ``%(name)s`` (no width, precision or other conversion)
and ``%%``; ``template_problem`` is the check ``PATCH /settings`` makes of an override, which
may use only its own label's placeholders.
"""

from __future__ import annotations

import gettext
import hashlib
import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

LOCALES_DIR = Path(__file__).parent / "locales"
DOMAIN = "hc"

# key (for overrides) -> English text (the msgid). Order: as a visitor meets them.
LABELS: dict[str, str] = {
    "skipToContent": "Skip to content",
    "languages": "Language",
    "headerLinks": "Links",
    "searchLabel": "Search the help center",
    "searchButton": "Search",
    "howCanWeHelp": "How can we help?",
    "breadcrumb": "Breadcrumb",
    "home": "Home",
    "categories": "Categories",
    "noCategories": "No categories yet.",
    "questionCount": "Questions: %(count)s",
    "popularQuestions": "Popular questions",
    "noQuestions": "No questions yet.",
    "sections": "Sections",
    "seeAll": "See all questions in %(name)s",
    "questions": "Questions",
    "updated": "Updated %(date)s",
    "relatedQuestions": "Related questions",
    "stillNeedHelp": "Still need help?",
    "contactUs": "Contact us",
    "feedback": "Feedback",
    "wasThisHelpful": "Was this helpful?",
    "yes": "Yes",
    "no": "No",
    "whatWasMissing": "If not, what was missing? (optional)",
    "sendFeedback": "Send",
    "thanks": "Thank you for your feedback.",
    "searchTitle": "Search: %(q)s",
    "resultsFor": "Results for “%(q)s”",
    "resultCount": "Results found: %(count)s",
    "bestResults": "Showing the best %(limit)s.",
    "noResults": "No results for this search. Try other words.",
    "browseCategories": "Browse all categories",
    "searchHint": "Type words of your question in the search box above.",
    "footerLinks": "Footer links",
    "notFoundTitle": "Page not found",
    "notFoundMessage": "There is no such page in this help center.",
    "goneTitle": "This question was removed",
    "goneMessage": "This question is no longer available. Try searching for another answer.",
    "unavailableTitle": "Temporarily unavailable",
    "unavailableMessage": (
        "The help center cannot show this page right now. Please try again in a moment."
    ),
    "errorTitle": "Something went wrong",
    "backHome": "Go to the help center home page",
    "tryAgain": "Please try again in a moment.",
    # Refusals: the help center's rate limits (``limits.py``) and the feedback form's.
    "tooManyRequestsTitle": "Too many requests",
    "tooManyFromNetwork": (
        "Too many requests from your network. Please try again in a few seconds."
    ),
    "helpCenterBusy": (
        "This help center is very busy right now. Please try again in a few seconds."
    ),
    "otherSiteTitle": "This form was sent from another site",
    "otherSiteMessage": (
        "Your vote was not recorded. Vote on the question page of this help center."
    ),
    "formExpiredTitle": "This form has expired",
    "formExpiredMessage": "Your vote was not recorded. Reload the question page and vote again.",
    "voteUnreadableTitle": "Your vote could not be read",
    "voteUnreadableMessage": "Choose Yes or No; a reason is at most %(max)s characters.",
    "tooManyVotesTitle": "Too many votes",
    "tooManyVotesMessage": "Please wait a minute and try again.",
    "noSuchQuestion": "There is no such question in this help center.",
    # Readers signing in (issue 39: ``access.py``, ``oidc.py``).
    "signIn": "Sign in",
    "signOut": "Sign out",
    "account": "Account",
    "signedInAs": "Signed in as %(name)s",
    "signInWith": "Sign in with %(provider)s",
    "privateHelpCenter": "This help center is for signed-in readers. Sign in to continue.",
    "signInInvalidTitle": "This sign-in link is not valid",
    "signInInvalidMessage": "It may have expired or been used already. Please sign in again.",
    "signInNotSetUp": "Signing in is not set up for this help center yet.",
    "signInFailedTitle": "Signing in did not work",
    "signInFailedMessage": "Please try signing in again.",
    "signInUnavailableTitle": "The sign-in service did not answer",
}
KEY_OF = {text: key for key, text in LABELS.items()}
MAX_OVERRIDE = 200  # characters of one overridden label

# ``%%``, ``%(name)s``, or a ``%`` that starts neither (``%(q)50s``, ``%d``, ``100%``).
_TOKEN = re.compile(r"%(?:%|\((?P<name>[A-Za-z_]\w*)\)s)?")


def placeholders(key: str) -> frozenset[str]:
    """The names a label's English text fills (``resultsFor``: ``{"q"}``)."""
    return frozenset(m["name"] for m in _TOKEN.finditer(LABELS[key]) if m["name"])


def template_problem(key: str, text: str) -> str | None:
    """Why ``text`` cannot override label ``key`` (None if it can): each ``%`` must start
    ``%%`` or one of the label's own ``%(name)s``."""
    allowed = placeholders(key)
    for match in _TOKEN.finditer(text):
        name = match["name"]
        if match[0] == "%":
            shown = text[match.start() : match.start() + 12]
            hint = ", ".join(f"%({n})s" for n in sorted(allowed)) or "no placeholder"
            return f"{shown!r} is not a placeholder: this label takes {hint}; write %% for %"
        if name is not None and name not in allowed:
            return f"%({name})s is not a placeholder of this label"
    return None


def substitute(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with ``%(name)s`` replaced by ``values[name]`` (as text) and ``%%`` by
    ``%``; anything else is kept as written. Never Python's ``%``: the output is at most the
    template's length plus one value per placeholder written."""

    def one(match: re.Match[str]) -> str:
        name = match["name"]
        if name is None:
            return "%" if match[0] == "%%" else match[0]
        return str(values[name]) if name in values else match[0]

    return _TOKEN.sub(one, template)


@dataclass(frozen=True)
class Catalog:
    translations: gettext.GNUTranslations
    same: frozenset[str]  # msgids translated by themselves ("Feedback" in German)


def _load(language: str) -> Catalog:
    path = LOCALES_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"
    with path.open("rb") as po:
        parsed = read_po(po, domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, parsed, use_fuzzy=False)
    compiled.seek(0)
    same = frozenset(m.id for m in parsed if isinstance(m.id, str) and m.id and m.string == m.id)
    return Catalog(gettext.GNUTranslations(compiled), same)


def catalog_languages() -> list[str]:
    """The languages that have a catalog (folder names), sorted."""
    return sorted(p.parent.parent.name for p in LOCALES_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))


# Read and compiled once, when the app is imported (~0.3 s for 21 catalogs): no file is read
# on the event loop afterwards.
CATALOGS = {language: _load(language) for language in catalog_languages()}


def candidates(tag: str) -> list[str]:
    """``fr-CA`` -> ``["fr-CA", "fr"]``: the tag, then its language."""
    language = tag.split("-")[0]
    return [tag, language] if language != tag else [tag]


def translated(tag: str, text: str) -> str | None:
    """The catalog's translation of ``text`` in ``tag`` (else its language), or None."""
    for candidate in candidates(tag):
        found = CATALOGS.get(candidate.replace("-", "_"))
        if found is None:
            continue
        out = found.translations.gettext(text)
        if out != text or text in found.same:
            return out
    return None


class Labels:
    """The labels of one page: ``labels(text, **values)``; ``overrides`` maps a key of
    ``LABELS`` to ``{locale: text}`` (an org's ``helpCenter.labels``)."""

    def __init__(self, locale: str, overrides: Mapping[str, Mapping[str, str]] | None = None):
        self.locale = locale
        self.overrides = overrides or {}
        self.version = hashlib.sha256(
            json.dumps([locale, self.overrides], sort_keys=True).encode()
        ).hexdigest()[:12]
        self._cache: dict[str, str] = {}

    def text(self, english: str) -> str:
        found = self._cache.get(english)
        if found is not None:
            return found
        by_locale = self.overrides.get(KEY_OF.get(english, ""), {})
        override = next((by_locale[t] for t in candidates(self.locale) if t in by_locale), None)
        out = override if override is not None else (translated(self.locale, english) or english)
        self._cache[english] = out
        return out

    def __call__(self, english: str, **values: Any) -> str:
        out = self.text(english)
        # Text put in a label (a query) is isolated from the label's direction (Unicode's
        # first strong isolate): an English query in an Arabic sentence keeps its own order.
        isolated = {k: f"\u2068{v}\u2069" if isinstance(v, str) else v for k, v in values.items()}
        return substitute(out, isolated)


ENGLISH = Labels("en")


def labels_for(locale: str, help_center: Mapping[str, Any]) -> Labels:
    """The labels of a page in ``locale`` of an org with these help center settings."""
    overrides = help_center.get("labels")
    return Labels(locale, overrides if isinstance(overrides, dict) else None)
