"""Every actor module, imported so each records its actors (``tasks/registry.py``)."""

from __future__ import annotations

import tasks.analytics
import tasks.billing
import tasks.deliveries
import tasks.help_center
import tasks.publishing
import tasks.purge
import tasks.relay
import tasks.transfers

__all__ = ["tasks"]
