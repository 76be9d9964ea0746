"""Organizations, API keys, schema-per-tenant binding and the settings every process reads."""
