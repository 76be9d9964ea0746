"""Dramatiq actors (publishing, outbox fan-out, deliveries, purge) and the scheduler.

Importing anything from ``tasks`` configures the broker first (from ``REDIS_URL``), so no
actor can be declared on Dramatiq's default broker by accident. ``tasks.actors`` imports every
actor module; ``faq worker`` runs them.
"""

from tasks import broker as broker
