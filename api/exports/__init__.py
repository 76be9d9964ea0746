"""Exports: everything an org holds, as a zip of NDJSON files (``docs/import-export.md``)."""
