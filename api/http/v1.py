"""``/api/v1/{org}``: every route below binds its org first (``api.http.binding``).

To add a resource: a folder under ``api/`` with routes, service, models and schemas, and one
``register_blueprint`` line here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quart import Blueprint, g, request
from werkzeug.routing import Rule

from api.analytics.routes import analytics
from api.answers.routes import answers
from api.audiences.routes import audiences
from api.audit.routes import audit
from api.billing.routes import billing
from api.categories import service as categories_service
from api.categories.routes import categories
from api.errors import MethodNotAllowed
from api.exports.routes import exports
from api.helpcenter.widget_votes import widget_votes
from api.http.binding import (
    bind_request_to_org,
    close_request_session,
    finish_request_transaction,
)
from api.http.conditional import answer_not_modified, tag_response
from api.http.cors import add_cors_headers, answer_preflight
from api.imports.routes import imports
from api.keys.routes import keys
from api.members.routes import members
from api.questions.draft_routes import question_drafts
from api.questions.routes import questions
from api.questions.rules import SLUGS as QUESTION_SLUGS
from api.reviews.routes import reviews
from api.reviews.workflow_routes import workflow_settings
from api.settings.routes import settings
from api.translations.file_routes import translation_files
from api.translations.routes import translations
from api.webhooks.routes import webhooks

api_v1 = Blueprint("api", __name__, url_prefix="/api/v1/<org>")


@api_v1.url_value_preprocessor
def pull_org_slug(_endpoint: str | None, values: dict[str, Any] | None) -> None:
    g.org_slug = (values or {}).pop("org", "")


# Literal segments that are operations of a resource (SPEC: "an operation, not a slug").
OPERATIONS = {
    "api.categories": categories_service.OPERATIONS,
    "api.questions": QUESTION_SLUGS.reserved,
}


def is_operation_on_item_route(rule: Rule | None, values: Mapping[str, Any] | None) -> bool:
    """The item route (``…/categories/<ref>``) matched an operation segment (``merge``): the
    path names the operation, whose methods are the only ones it has."""
    if rule is None or not rule.rule.endswith("/<ref>") or not rule.endpoint:
        return False
    blueprint = rule.endpoint.rpartition(".")[0]
    return (values or {}).get("ref") in OPERATIONS.get(blueprint, ())


async def refuse_other_methods_on_operations() -> None:
    """``GET …/categories/merge`` is 405 ``method_not_allowed`` before the key is looked at,
    like a method the router refuses itself (``PUT …/categories``): it matched the item route
    only because ``merge`` looks like a ref. ``api.app`` adds the ``Allow`` header."""
    if is_operation_on_item_route(request.url_rule, request.view_args):
        raise MethodNotAllowed()


api_v1.before_request(answer_preflight)  # CORS preflights carry no key (api/http/cors.py)
api_v1.before_request(refuse_other_methods_on_operations)
api_v1.before_request(bind_request_to_org)
# After-request functions run last-registered first: CORS headers go on the final response;
# the ETag is made before the commit (the cache keeps it), 304 answered after it.
api_v1.after_request(add_cors_headers)
api_v1.after_request(answer_not_modified)
api_v1.after_request(finish_request_transaction)
api_v1.after_request(tag_response)
api_v1.teardown_request(close_request_session)

api_v1.register_blueprint(categories)
api_v1.register_blueprint(questions)
api_v1.register_blueprint(webhooks)
api_v1.register_blueprint(audiences)
api_v1.register_blueprint(billing)
api_v1.register_blueprint(settings)
api_v1.register_blueprint(translations)
api_v1.register_blueprint(translation_files)
api_v1.register_blueprint(keys)
api_v1.register_blueprint(analytics)
api_v1.register_blueprint(audit)
api_v1.register_blueprint(imports)
api_v1.register_blueprint(exports)
api_v1.register_blueprint(answers)
api_v1.register_blueprint(members)
api_v1.register_blueprint(question_drafts)
api_v1.register_blueprint(reviews)
api_v1.register_blueprint(workflow_settings)
api_v1.register_blueprint(widget_votes)  # the widget's "Was this helpful?" (issue 41)
