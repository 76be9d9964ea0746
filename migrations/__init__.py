"""Alembic version trees: ``shared/`` (the shared schema) and ``tenant/`` (every org schema).

They are run by ``tenancy.schemas`` (``faq migrate``), not by an env.py: the runner binds each
tenant schema and records its head in ``shared.organizations.schema_revision``.
"""
