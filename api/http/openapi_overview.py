"""The overview that opens ``/docs`` (the OpenAPI document's ``info.description``, Markdown):
what every operation shares, which no single operation's text says."""

from __future__ import annotations

OVERVIEW = """\
A multi-tenant FAQ API: each organization keeps categories, questions and their revisions
and translations, and receives signed webhooks about every change. Every route of the API is
under `/api/v1/{org}`, where `{org}` is the organization's slug.

The organization's hosted help center, once its settings turn it on (`PATCH …/settings`,
`helpCenter.enabled`), is at `/hc/{org}/`: HTML pages, not part of this document.

## Authentication

Every request sends an API key: `Authorization: Bearer <key>`. There are two kinds.

| kind | looks like | scopes | for |
|---|---|---|---|
| secret key | `faq_…` | `read`, `write`, `review` or `admin` | servers only |
| publishable key | `faq_pk_…` | `public` alone | browsers: reads published content |

Scopes are ordered: `admin` includes `write` and `review`, `write` includes `read`; `review`
(approving drafts) includes `read` too: a reviewer reads what it approves. A publishable key reads
categories and published questions (lists, single reads, search, published translations).

A secret key is made with `faq keys create SLUG --scopes admin` or `POST …/keys`; the key is
shown once, only its hash is kept. A publishable key answers CORS requests from its
`allowedOrigins` and is also limited per client address. A missing, unknown, revoked or
expired key is `401 unauthorized`; a key of another organization, or an unknown slug, is
`404 org_not_found`; a key without the operation's scope is `403 insufficient_scope`.

## Errors

Every error has the same body, whatever the status:

```json
{"error": {"code": "validation_failed", "message": "The request is not valid.",
           "details": [{"field": "title", "issue": "required"}]}}
```

`code` is stable and meant for programs; `message` is for people; `details` names each field
as it was sent (it may be empty). Bad input changes nothing. Webhook routes answer body errors
with `validation_error`, the others with `validation_failed`. A 5xx never carries a stack
trace; `503 service_unavailable` (with `Retry-After`) is safe to retry. Every response carries
`X-Request-Id` (yours, when you send one): quote it when you report a problem.

## Pagination

Lists answer `{"data": [...], "meta": {"pagination": {"limit": 20, "cursor": "…",
"hasMore": true}}}`. To read the next page, send `cursor` from `meta.pagination.cursor` of the
previous answer; `hasMore: false` (and `cursor: null`) is the last page. Cursors are opaque and
tamper-evident; `limit` is 1 to 100. Pages never repeat or skip an item while the data is
unchanged.

## Rate limits

Each key has a budget of requests per minute set by its organization's plan (FREE 1,200,
STARTER 6,000, PRO 30,000, ENTERPRISE 120,000). Answers carry `RateLimit-Limit`,
`RateLimit-Remaining` and `RateLimit-Reset` (seconds); past the budget the answer is
`429 rate_limited` with `Retry-After`. Many failed authentications from one address are also
answered 429.

## Idempotency

`POST …/questions` takes an `X-Idempotency-Key` header (1 to 255 characters), kept 24 hours per
organization. The same key with the same body returns the first answer again (same status and
body, with `Idempotent-Replayed: true`), also when the two requests race; the same key with
another body is `422 idempotency_key_reused`. Only 2xx answers are kept.

## Webhook signatures

A webhook `POST`s JSON to your `https` URL on every change it subscribes to, with
`X-Service-Event`, `X-Service-Delivery-Id` and two signatures, both HMAC-SHA256 keyed with the
whole secret string (`whsec_…`, shown once when the webhook is created):

- `X-Service-Webhook-Signature: t=<unix seconds>,v1=<hex>`: the HMAC of `"<t>." + raw body`.
  Verify this one: accept when a `v1` matches and `t` is within 300 seconds of your clock.
- `X-Service-Signature: sha256=<hex>`: the HMAC of the raw body alone (no timestamp; for older
  receivers, which must deduplicate on the delivery id).

Verify the raw bytes before parsing them. Each attempt is signed afresh; a failed delivery is
retried up to 3 times with growing delays. `docs/webhooks.md` has a complete receiver.
"""
