"""Every actor, for ``faq worker`` (``dramatiq tasks.actors``) and for senders."""

from __future__ import annotations

from tasks import broker as broker  # noqa: F401  (configures the broker first)
