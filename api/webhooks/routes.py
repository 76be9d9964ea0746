"""HTTP routes of webhooks: validate, call one service function, return the public shape."""

from __future__ import annotations

from quart import Blueprint

webhooks = Blueprint("webhooks", __name__)
