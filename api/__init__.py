"""The HTTP API: app factory, error rendering, pagination, and one folder per resource."""
