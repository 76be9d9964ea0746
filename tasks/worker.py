"""What ``faq worker`` runs (``dramatiq tasks.worker``): the broker with every actor declared.

Dramatiq's worker imports this module and looks for ``broker``; this is the one module whose
import configures the broker, and only a worker process imports it.
"""

from __future__ import annotations

from tasks.broker import configure_worker_broker

broker = configure_worker_broker()
