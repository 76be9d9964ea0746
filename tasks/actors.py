"""Every actor, for ``faq worker`` (``dramatiq tasks.actors``) and for senders.

The broker is configured by ``tasks/__init__.py`` before any of these modules declares an actor.
"""

from __future__ import annotations

import tasks.billing
import tasks.deliveries
import tasks.events
import tasks.publishing
import tasks.purge

__all__ = ["tasks"]
