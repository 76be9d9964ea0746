"""Content analytics (issue 17): recording (``recording.py``), daily aggregation, the API."""
