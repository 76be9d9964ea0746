"""An example of every request body of ``/openapi.json`` (by method and path), and of the error
body each status usually carries. ``tests/api/test_openapi_document.py`` checks that every
body has one and that each JSON example is valid against its operation's schema."""

from __future__ import annotations

from typing import Any

from werkzeug.http import HTTP_STATUS_CODES

from api.errors import (
    IdempotencyKeyReused,
    InsufficientScope,
    InternalError,
    MethodNotAllowed,
    OrgNotFound,
    PayloadTooLarge,
    RateLimited,
    ServiceError,
    ServiceUnavailable,
    SlugConflict,
    Unauthorized,
    ValidationFailed,
    field_error,
)
from billing.errors import PlanLimitReached, StripeUnavailable

CATEGORY_ID = "cat_01JD8X3Q7N2K5V9M4R6T8W0Y2A"
QUESTION_ID = "q_01JD8X4B2C3D4E5F6G7H8J9K0M"

XLIFF_EXAMPLE = """\
<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file original="faq" source-language="en" target-language="fr" datatype="plaintext">
    <body>
      <trans-unit id="question/q_01JD8X4B2C3D4E5F6G7H8J9K0M/title">
        <source>How do I reset my password?</source>
        <target>Comment réinitialiser mon mot de passe ?</target>
      </trans-unit>
    </body>
  </file>
</xliff>
"""

REQUEST_EXAMPLES: dict[tuple[str, str], Any] = {
    ("post", "/api/v1/{org}/categories"): {
        "name": "Billing & Payments",
        "description": "Invoices, **refunds** and payment methods.",
        "parentId": None,
    },
    ("patch", "/api/v1/{org}/categories/{ref}"): {"name": "Billing", "order": 2},
    ("post", "/api/v1/{org}/categories/merge"): {
        "sourceId": "cat_01JD8X5R6S7T8V9W0X1Y2Z3A4B",
        "targetId": CATEGORY_ID,
        "deleteSource": True,
    },
    ("post", "/api/v1/{org}/categories/reorder"): {
        "ids": [CATEGORY_ID, "cat_01JD8X5R6S7T8V9W0X1Y2Z3A4B"]
    },
    ("post", "/api/v1/{org}/questions"): {
        "title": "How do I reset my password?",
        "answer": "Open **Settings → Security** and choose *Reset password*.",
        "categoryId": CATEGORY_ID,
        "status": "published",
    },
    ("patch", "/api/v1/{org}/questions/{ref}"): {
        "status": "draft",
        "scheduledPublishAt": "2026-12-01T09:00:00.000Z",
    },
    ("post", "/api/v1/{org}/questions/reorder"): {
        "ids": [QUESTION_ID, "q_01JD8X6C7D8E9F0G1H2J3K4M5N"]
    },
    ("post", "/api/v1/{org}/webhooks"): {
        "url": "https://hooks.example.com/faq",
        "events": ["question.published", "category.updated"],
        "description": "search index",
    },
    ("patch", "/api/v1/{org}/webhooks/{webhook_id}"): {"active": False},
    ("put", "/api/v1/{org}/settings/readers"): {
        "issuer": "https://app.example.com",
        "maxLifetimeSeconds": 3600,
        "keys": [{"kid": "app-2026", "alg": "HS256"}],
        "openIdConnect": {
            "issuer": "https://login.example.com",
            "clientId": "faq-help-center",
            "clientSecret": "s3cr3t-from-the-provider",
            "audiencesClaim": "groups",
            "displayName": "Example SSO",
        },
    },
    ("post", "/api/v1/{org}/audiences"): {
        "name": "Partners",
        "description": "Resellers signed in from the partner portal",
    },
    ("patch", "/api/v1/{org}/audiences/{ref}"): {"name": "Partners and resellers"},
    ("post", "/api/v1/{org}/webhooks/{webhook_id}/recover"): {"since": "2026-11-20T00:00:00.000Z"},
    ("post", "/api/v1/{org}/billing/checkout"): {"plan": "pro"},
    ("patch", "/api/v1/{org}/settings"): {"defaultLocale": "en", "locales": ["en", "fr", "de"]},
    ("put", "/api/v1/{org}/questions/{ref}/translations/{locale}"): {
        "title": "Comment réinitialiser mon mot de passe ?",
        "answer": "Ouvrez **Paramètres → Sécurité** et choisissez *Réinitialiser*.",
        "status": "published",
    },
    ("put", "/api/v1/{org}/categories/{ref}/translations/{locale}"): {
        "name": "Facturation et paiements",
        "description": "Factures, remboursements et moyens de paiement.",
    },
    ("post", "/api/v1/{org}/translations/import"): XLIFF_EXAMPLE,
    ("post", "/api/v1/{org}/keys"): {
        "name": "help widget on www.example.com",
        "scopes": ["public"],
        "allowedOrigins": ["https://www.example.com"],
    },
    ("post", "/api/v1/{org}/questions/{ref}/votes"): {  # the widget's (issue 41)
        "helpful": False,
        "reason": "The link in the answer is broken.",
        "locale": "en",
    },
    ("put", "/api/v1/{org}/synonyms"): {
        "locale": "en",
        "groups": [["refund", "money back", "reimbursement"], ["sign in", "log in"]],
    },
    ("put", "/api/v1/{org}/synonyms/lexicon"): {"locale": "en", "disabled": ["pricing"]},
    ("post", "/api/v1/{org}/members"): {
        "email": "ada@example.com",
        "name": "Ada Lovelace",
        "role": "editor",
    },
    ("patch", "/api/v1/{org}/members/{member_id}"): {"role": "author"},
    ("put", "/api/v1/{org}/questions/{ref}/draft"): {
        "title": "How do I reset my password?",
        "answer": "Open **Settings → Security**, choose *Reset password* and follow the email.",
    },
    ("post", "/api/v1/{org}/questions/{ref}/draft/publish"): {
        "scheduledPublishAt": "2026-12-01T09:00:00.000Z"
    },
    ("post", "/api/v1/{org}/questions/{ref}/draft/review"): {
        "reviewerIds": ["mem_01JD8X7P8Q9R0S1T2V3W4X5Y6Z"]
    },
    ("post", "/api/v1/{org}/questions/{ref}/draft/approve"): {
        "comment": "Checked against the billing policy.",
        "version": 3,
    },
    ("post", "/api/v1/{org}/questions/{ref}/draft/reject"): {
        "comment": "The refund window is 30 days, not 14.",
        "version": 3,
    },
    ("patch", "/api/v1/{org}/settings/workflow"): {"requireReview": True},
    ("post", "/billing/stripe/webhook"): {
        "id": "evt_1QExample",
        "type": "customer.subscription.updated",
        "created": 1795268529,
        "data": {
            "object": {
                "id": "sub_1QExample",
                "customer": "cus_QExample",
                "status": "active",
                "metadata": {"org": "demo"},
                "items": {"data": [{"price": {"lookup_key": "pro"}}]},
            }
        },
    },
}


def _body(error: ServiceError) -> dict[str, Any]:
    return error.body()


# The body each status most often carries, from the errors the service raises.
ERROR_EXAMPLES: dict[str, dict[str, Any]] = {
    "400": _body(ValidationFailed(details=field_error("title", "required"))),
    "401": _body(Unauthorized()),
    "402": _body(PlanLimitReached()),
    "403": _body(InsufficientScope()),
    "404": _body(OrgNotFound()),
    "405": _body(MethodNotAllowed()),
    "409": _body(SlugConflict(details=field_error("slug", "already in use"))),
    "413": _body(PayloadTooLarge()),
    "422": _body(IdempotencyKeyReused()),
    "429": _body(RateLimited()),
    "500": _body(InternalError()),
    "502": _body(StripeUnavailable()),
    "503": _body(ServiceUnavailable()),
}


def error_example(status: str) -> dict[str, Any]:
    """An error body for a status without an entry above, named by its HTTP reason."""
    reason = HTTP_STATUS_CODES.get(int(status), "Error")
    error = ServiceError(f"{reason}.")
    error.code = "_".join(reason.lower().replace("-", " ").split())
    return error.body()
