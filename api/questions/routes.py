"""HTTP routes of questions: validate, call one service function, return the public shape."""

from __future__ import annotations

from quart import Blueprint

questions = Blueprint("questions", __name__)
