"""The request's plumbing, shared by every HTTP door: authenticate -> principal, binding to the
org's schema, rate limits, the response cache and the fast path, CORS, conditional requests,
pagination, OpenAPI, observability. Resources' routes use it; nothing here decides a domain rule."""
