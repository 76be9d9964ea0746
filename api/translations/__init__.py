"""Translations of questions and categories: one per resource and locale (issue 15)."""
