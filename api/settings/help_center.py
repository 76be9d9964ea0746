"""The help center's settings (issue 16): ``{"enabled", "title", "primaryColor",
"externalImages"}`` stored in ``shared.organizations.help_center`` (jsonb). Off by default; the
title defaults to the org's name and the colour to ``DEFAULT_COLOR``; ``externalImages``
(issue 26) is off by default: an answer's image from another host is shown as a link to it
(``api.helpcenter.render``), and the pages' Content-Security-Policy allows images only from
the service. Validation names the field as the client sent it (``helpCenter.primaryColor``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from api.errors import ValidationFailed, field_error

FIELD = "helpCenter"
DEFAULT_COLOR = "#1f5fbf"
MAX_TITLE = 120
COLOR = re.compile(r"#[0-9a-fA-F]{6}")
KNOWN = ("enabled", "title", "primaryColor", "externalImages")
BOOLEANS = ("enabled", "externalImages")  # false unless set to true


def public(stored: Mapping[str, Any] | None, org_name: str) -> dict[str, Any]:
    """The settings as clients see them, defaults filled in."""
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
    }


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
    out = {k: v for k, v in (stored or {}).items() if k in KNOWN}
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
    out.setdefault("enabled", False)
    return out
