"""Every actor, for ``faq worker`` (``dramatiq tasks.actors``) and for senders."""

from __future__ import annotations

from tasks import broker as broker  # noqa: F401  (configures the broker first)
import tasks.billing  # noqa: E402, F401
import tasks.publishing  # noqa: E402, F401
import tasks.purge  # noqa: E402, F401
import tasks.deliveries  # noqa: E402, F401
import tasks.events  # noqa: E402, F401
