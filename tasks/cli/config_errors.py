"""A configuration error as one line saying what to set, never a traceback.

Configuration is the environment (12-factor): a variable that is missing (``DATABASE_URL is
not set``, raised by ``tenancy.settings``), one that ``Settings`` refuses (pydantic names the
field: the variable is its upper-case name), ``FAQ_LOG_FORMAT`` out of its choices, or a
server the URLs name that does not answer.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

# tenancy.settings' words for a missing variable: "DATABASE_URL is not set (…)".
_MISSING = re.compile(r"^([A-Z][A-Z0-9_]+) is not set\b")
_START_DEV = "start `make run` (faq dev) in this folder, or set it"


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def configuration_problem(error: BaseException) -> str | None:
    """The line to print for ``error`` when it is a configuration error, else None."""
    for cause in _chain(error):
        if isinstance(cause, ValidationError) and cause.title == "Settings":
            problems = []
            for item in cause.errors(include_url=False):
                variable = "_".join(str(part) for part in item["loc"]).upper()
                problems.append(f"{variable}={item.get('input')!r}: {item['msg']}")
            return "configuration error: " + "; ".join(problems)
        if isinstance(cause, RuntimeError):
            missing = _MISSING.match(str(cause))
            if missing is not None and missing.group(1) in {"DATABASE_URL", "REDIS_URL"}:
                return f"configuration error: {missing.group(1)} is not set: {_START_DEV}"
            if missing is not None:
                return f"configuration error: {cause}"
        if isinstance(cause, ValueError) and str(cause).startswith("FAQ_LOG_FORMAT "):
            return f"configuration error: {cause}"
        if isinstance(cause, ConnectionRefusedError):
            return (
                f"cannot connect ({cause.strerror or cause}): check that DATABASE_URL and "
                "REDIS_URL name running servers, or start `make run` (faq dev)"
            )
    return None
