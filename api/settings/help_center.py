"""The help center's settings (issue 16): ``{"enabled", "title", "primaryColor",
"externalImages", "headerLinks", "footerLinks", "legalText", "labels", "contactUrl",
"categoryIcons"}`` and the read-only ``logoUrl`` (issue 32), stored in
``shared.organizations.help_center`` (jsonb). Off by default; the title defaults to the org's
name and the colour to ``DEFAULT_COLOR``; ``externalImages`` (issue 26) is off by default: an
answer's image from another host is shown as a link to it (``api.helpcenter.render``), and
the pages' Content-Security-Policy allows images only from the service. Validation names the
field as the client sent it (``helpCenter.primaryColor``).

Theming within safe bounds (issue 32): links (``{"label", "url"}``, http(s), mailto or a path
on this host) in the header and the footer, a plain legal text under the footer, per-label
overrides of the pages' words (``labels``: ``{key: {locale: text}}``, keys of
``api.helpcenter.i18n.LABELS``), and a logo uploaded apart (``PUT /settings/help-center/logo``:
the stored ``logo`` is its digest and type, shown as ``logoUrl``). Issue 41: ``contactUrl``,
the "Still need help?" link after search results and answers (an http(s) URL; none, no link),
and ``categoryIcons``, an emoji per category card (``{categoryId: emoji}``). Issue 39:
``access`` (``public``, the default, or ``signed-in``: a private help center) and
``signInUrl``, the org's own sign-in page the help center sends readers to (JWT sign-in,
``api.helpcenter.access``). Nothing an org
sets is CSS or script: every value is text, escaped on the pages."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from api.errors import ValidationFailed, field_error
from api.helpcenter.i18n import LABELS, MAX_OVERRIDE, template_problem
from api.locales import canonical_tag
from tenancy.ids import looks_like_id

FIELD = "helpCenter"
DEFAULT_COLOR = "#1f5fbf"
MAX_TITLE = 120
COLOR = re.compile(r"#[0-9a-fA-F]{6}")
KNOWN = (
    "enabled", "title", "primaryColor", "externalImages", "headerLinks", "footerLinks",
    "legalText", "labels", "contactUrl", "categoryIcons", "access", "signInUrl",
)  # fmt: skip
BOOLEANS = ("enabled", "externalImages")  # false unless set to true
LOGO = "logo"  # {"digest", "type"}: set by the logo upload only, kept by every PATCH
MAX_HEADER_LINKS = 6
MAX_FOOTER_LINKS = 12
MAX_LINK_LABEL = 60
MAX_URL = 2000
MAX_LEGAL_TEXT = 1000
MAX_LABEL_LOCALES = 100  # overrides of one label (the plans' largest locale cap)
LINK_SCHEMES = ("https://", "http://", "mailto:")
WEB_SCHEMES = ("https://", "http://")  # the contact URL's (issue 41)
MAX_CATEGORY_ICONS = 500  # the help center's categories (``content.MAX_CATEGORIES``)
MAX_ICON = 16  # code points of one icon: an emoji with its modifiers and joiners
# What an icon's code points may be: symbols (emoji), marks and format characters (variation
# selectors, zero-width joiners, skin tones, tags); never a letter, digit or space.
ICON_CATEGORIES = frozenset({"So", "Sk", "Mn", "Me", "Cf"})
# Issue 39: who may read the pages. "signed-in": anonymous visitors get the sign-in page only.
ACCESS = ("public", "signed-in")
LOGO_TYPES = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}


def logo_path(stored: Mapping[str, Any] | None) -> str | None:
    """The logo's path under ``/hc/{org}/`` (its digest in it: cached for ever), or None."""
    logo = (stored or {}).get(LOGO)
    if not isinstance(logo, dict) or logo.get("type") not in LOGO_TYPES:
        return None
    return f"logo/{logo['digest']}.{LOGO_TYPES[logo['type']]}"


def public(stored: Mapping[str, Any] | None, org_name: str, slug: str = "") -> dict[str, Any]:
    """The settings as clients see them, defaults filled in (``logoUrl``: a path under
    ``/hc/{slug}/``)."""
    stored = stored or {}
    title = stored.get("title")
    color = stored.get("primaryColor")
    return {
        "enabled": stored.get("enabled") is True,
        "title": title if isinstance(title, str) and title else org_name,
        "primaryColor": color
        if isinstance(color, str) and COLOR.fullmatch(color)
        else DEFAULT_COLOR,
        "externalImages": stored.get("externalImages") is True,
        "headerLinks": list(stored.get("headerLinks") or []),
        "footerLinks": list(stored.get("footerLinks") or []),
        "legalText": stored.get("legalText") or None,
        "labels": dict(stored.get("labels") or {}),
        "contactUrl": stored.get("contactUrl") or None,
        "categoryIcons": dict(stored.get("categoryIcons") or {}),
        "logoUrl": _logo_url(stored, slug),
        "access": stored.get("access") if stored.get("access") in ACCESS else ACCESS[0],
        "signInUrl": stored.get("signInUrl") or None,
    }


def _logo_url(stored: Mapping[str, Any], slug: str) -> str | None:
    path = logo_path(stored)
    return f"/hc/{slug}/{path}" if path is not None else None


def stored_form(settings: Mapping[str, Any], org_name: str) -> dict[str, Any]:
    """What ``shared.organizations.help_center`` keeps: the public form in full (the pages
    read the record the directory caches: no org name there) and the logo's digest."""
    out = public(settings, org_name)
    del out["logoUrl"]
    if logo_path(settings) is not None:
        out[LOGO] = dict(settings[LOGO])
    return out


def _refuse(name: str, issue: str) -> ValidationFailed:
    return ValidationFailed(details=field_error(f"{FIELD}.{name}" if name else FIELD, issue))


def merged(stored: Mapping[str, Any] | None, sent: Any) -> dict[str, Any]:
    """``stored`` with the fields of ``sent`` (a partial update), validated; raises
    ``ValidationFailed`` naming ``helpCenter.<field>``. A title of null or "" goes back to
    the default (the org's name)."""
    if not isinstance(sent, dict):
        raise _refuse("", "must be an object")
    for name in sent:
        if name not in KNOWN:
            raise _refuse(name, "unknown or read-only field")
    out = {k: v for k, v in (stored or {}).items() if k in KNOWN or k == LOGO}
    for name in BOOLEANS:
        if name in sent:
            if not isinstance(sent[name], bool):
                raise _refuse(name, "must be a boolean")
            out[name] = sent[name]
    if "title" in sent:
        title = sent["title"]
        if title is None:
            out.pop("title", None)
        elif not isinstance(title, str):
            raise _refuse("title", "must be a string")
        else:
            title = " ".join(title.split())
            if len(title) > MAX_TITLE:
                raise _refuse("title", f"at most {MAX_TITLE} characters")
            if "\x00" in title:
                raise _refuse("title", "must not contain NUL")
            if title:
                out["title"] = title
            else:
                out.pop("title", None)
    if "primaryColor" in sent:
        color = sent["primaryColor"]
        if color is None:
            out.pop("primaryColor", None)
        elif not isinstance(color, str) or not COLOR.fullmatch(color):
            raise _refuse("primaryColor", "must be a colour as #rrggbb")
        else:
            out["primaryColor"] = color.lower()
    for name, cap in (("headerLinks", MAX_HEADER_LINKS), ("footerLinks", MAX_FOOTER_LINKS)):
        if name in sent:
            links = _links(name, sent[name], cap)
            if links:
                out[name] = links
            else:
                out.pop(name, None)
    if "legalText" in sent:
        legal = _text("legalText", sent["legalText"], MAX_LEGAL_TEXT, keep_lines=True)
        if legal:
            out["legalText"] = legal
        else:
            out.pop("legalText", None)
    if "labels" in sent:
        labels = _labels(sent["labels"])
        if labels:
            out["labels"] = labels
        else:
            out.pop("labels", None)
    if "contactUrl" in sent:
        contact = sent["contactUrl"]
        if contact is None or contact == "":
            out.pop("contactUrl", None)
        else:
            out["contactUrl"] = _web_url("contactUrl", contact)
    if "access" in sent:
        if sent["access"] not in ACCESS:
            raise _refuse("access", 'must be "public" or "signed-in"')
        out["access"] = sent["access"]
    if "signInUrl" in sent:  # issue 39: the org's own sign-in page (JWT sign-in)
        sign_in = sent["signInUrl"]
        if sign_in is None or sign_in == "":
            out.pop("signInUrl", None)
        else:
            out["signInUrl"] = _web_url("signInUrl", sign_in)
    if "categoryIcons" in sent:
        icons = _icons(out.get("categoryIcons"), sent["categoryIcons"])
        if icons:
            out["categoryIcons"] = icons
        else:
            out.pop("categoryIcons", None)
    out.setdefault("enabled", False)
    return out


def _icons(stored: Any, sent: Any) -> dict[str, str]:
    """``{categoryId: emoji}`` merged into the stored icons (a null or "" icon drops it; a
    null map drops them all): an icon is one emoji (symbols, marks and joiners only, at most
    ``MAX_ICON`` code points), shown as text beside the category's card."""
    if sent is None:
        return {}
    if not isinstance(sent, dict):
        raise _refuse("categoryIcons", "must be an object of category id: emoji")
    out = dict(stored) if isinstance(stored, dict) else {}
    for key, icon in sent.items():
        if not isinstance(key, str) or not looks_like_id(key, "cat"):
            raise _refuse("categoryIcons", f"{str(key)[:40]!r} is not a category id")
        name = f"categoryIcons.{key}"
        if icon is None or icon == "":
            out.pop(key, None)
            continue
        if not isinstance(icon, str) or len(icon) > MAX_ICON:
            raise _refuse(name, f"must be one emoji (at most {MAX_ICON} code points)")
        kinds = [unicodedata.category(c) for c in icon]
        if any(k not in ICON_CATEGORIES for k in kinds) or "So" not in kinds:
            raise _refuse(name, "must be one emoji (no letters, digits or spaces)")
        out[key] = icon
    if len(out) > MAX_CATEGORY_ICONS:
        raise _refuse("categoryIcons", f"at most {MAX_CATEGORY_ICONS} icons")
    return out


def _text(name: str, value: Any, cap: int, *, keep_lines: bool = False) -> str | None:
    """A plain text (None and "" clear it): spaces collapsed (line breaks kept in a
    ``keep_lines`` text), at most ``cap`` characters, no NUL or other control character."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _refuse(name, "must be a string")
    if keep_lines:
        lines = (" ".join(line.split()) for line in value.replace("\r\n", "\n").split("\n"))
        value = "\n".join(lines).strip("\n")
    else:
        value = " ".join(value.split())
    if len(value) > cap:
        raise _refuse(name, f"at most {cap} characters")
    if any((ord(c) < 32 and c != "\n") or ord(c) == 127 for c in value):
        raise _refuse(name, "must not contain control characters")
    return value or None


def _url(name: str, value: Any) -> str:
    """A link's URL: ``https://``, ``http://``, ``mailto:`` or a path on this host (``/...``,
    never ``//host``); no space or control character."""
    if not isinstance(value, str) or not value:
        raise _refuse(name, "must be a URL")
    if len(value) > MAX_URL:
        raise _refuse(name, f"at most {MAX_URL} characters")
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in value):
        raise _refuse(name, "must not contain spaces or control characters")
    lowered = value.lower()
    absolute = any(lowered.startswith(s) and len(value) > len(s) for s in LINK_SCHEMES)
    path = value.startswith("/") and not value.startswith("//") and "\\" not in value
    if not (absolute or path):
        raise _refuse(name, "must start with https://, http://, mailto: or /")
    return value


def _web_url(name: str, value: Any) -> str:
    """An ``https://`` or ``http://`` URL with a host (the "Still need help?" link)."""
    url = _url(name, value)
    lowered = url.lower()
    scheme = next((s for s in WEB_SCHEMES if lowered.startswith(s)), None)
    host = url[len(scheme) :].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0] if scheme else ""
    if not host or host.startswith("@") or host.endswith("@"):
        raise _refuse(name, "must be an http(s) URL with a host: https://acme.example/contact")
    return url


def _links(name: str, value: Any, cap: int) -> list[dict[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _refuse(name, "must be a list of links")
    if len(value) > cap:
        raise _refuse(name, f"at most {cap} links")
    links = []
    for i, link in enumerate(value):
        if not isinstance(link, dict) or set(link) - {"label", "url"}:
            raise _refuse(f"{name}[{i}]", 'must be {"label", "url"}')
        label = _text(f"{name}[{i}].label", link.get("label"), MAX_LINK_LABEL)
        if not label:
            raise _refuse(f"{name}[{i}].label", "must not be empty")
        links.append({"label": label, "url": _url(f"{name}[{i}].url", link.get("url"))})
    return links


def _labels(value: Any) -> dict[str, dict[str, str]]:
    """``{key: {locale: text}}``: keys of ``LABELS``, BCP 47 locales (canonical case kept),
    texts of at most ``MAX_OVERRIDE`` characters; a null or empty text drops that override."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _refuse("labels", "must be an object")
    out: dict[str, dict[str, str]] = {}
    for key, by_locale in value.items():
        if key not in LABELS:
            raise _refuse(f"labels.{key}"[:200], "unknown label")
        if not isinstance(by_locale, dict):
            raise _refuse(f"labels.{key}", "must be an object of locale: text")
        if len(by_locale) > MAX_LABEL_LOCALES:
            raise _refuse(f"labels.{key}", f"at most {MAX_LABEL_LOCALES} locales")
        texts: dict[str, str] = {}
        for tag, text in by_locale.items():
            canonical = canonical_tag(tag) if isinstance(tag, str) and len(tag) <= 35 else None
            if canonical is None:
                raise _refuse(f"labels.{key}", f"unknown locale {str(tag)[:35]!r}")
            kept = _text(f"labels.{key}.{canonical}", text, MAX_OVERRIDE)
            problem = template_problem(key, kept) if kept else None
            if problem is not None:
                raise _refuse(f"labels.{key}.{canonical}", problem)
            if kept:
                texts[canonical] = kept
        if texts:
            out[key] = texts
    return out
