"""The Webhooks API."""
