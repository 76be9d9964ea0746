"""``/api/v1/{org}``: every route below binds its org first (``tenancy.middleware``).

To add a resource: a folder under ``api/`` with routes, service, models and schemas, and one
``register_blueprint`` line here.
"""

from __future__ import annotations

from typing import Any

from quart import Blueprint, g

from api.categories.routes import categories
from api.questions.routes import questions
from api.webhooks.routes import webhooks
from billing.routes import billing
from tenancy.middleware import (
    bind_request_to_org,
    close_request_session,
    finish_request_transaction,
)

api_v1 = Blueprint("api", __name__, url_prefix="/api/v1/<org>")


@api_v1.url_value_preprocessor
def pull_org_slug(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    g.org_slug = (values or {}).pop("org", "")


api_v1.before_request(bind_request_to_org)
api_v1.after_request(finish_request_transaction)
api_v1.teardown_request(close_request_session)

api_v1.register_blueprint(categories)
api_v1.register_blueprint(questions)
api_v1.register_blueprint(webhooks)
api_v1.register_blueprint(billing)
