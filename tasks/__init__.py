"""The top layer: Dramatiq actors, the scheduler, the delivery engine and the ``faq`` CLI.

Importing a module of ``tasks`` configures nothing: the broker is set up when a worker, the
scheduler or the CLI starts (``tasks/broker.py``).
"""
