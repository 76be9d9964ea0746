"""Imports: other vendors' help centers, CSV, Markdown and our own bundles, as a job."""
