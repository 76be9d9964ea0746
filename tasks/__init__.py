"""Dramatiq actors (publishing, outbox fan-out, deliveries, purge) and the scheduler.

Importing ``tasks.actors`` configures the broker from ``REDIS_URL`` and declares every actor;
``faq worker`` runs them.
"""
