"""An idle keep-alive connection outlives a client's pause (issue 26): Hypercorn's default
closes it after 5 s, so a client (or a load balancer keeping idle upstream connections ~60 s)
reusing it just then got "Server disconnected without sending a response". ``faq serve``
keeps it ``FAQ_KEEP_ALIVE_SECONDS`` (75 s by default, longer than the chart's ingress idle
timeout)."""

from __future__ import annotations

import argparse
import http.client
import time

import pytest

from tasks.cli.processes import hypercorn_config
from tenancy.settings import Settings
from tests.fixtures.bounded import api_process

pytestmark = pytest.mark.slow

PAUSE_SECONDS = 6.0  # past Hypercorn's default of 5 s
PAUSES = 3
CHEAP_PATH = "/healthz"  # answered on the event loop, no database


def test_a_client_pausing_between_requests_on_one_connection_is_never_dropped() -> None:
    with api_process() as api:
        host, port = api.base_url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            connection.request("GET", CHEAP_PATH)
            first = connection.getresponse()
            first.read()
            assert first.status == 200
            socket = connection.sock
            for pause in range(PAUSES):
                time.sleep(PAUSE_SECONDS)
                # http.client reconnects by itself only after it saw the close; a connection
                # the server closed meanwhile raises here (RemoteDisconnected, BrokenPipe).
                connection.request("GET", CHEAP_PATH)
                response = connection.getresponse()
                response.read()
                assert response.status == 200, pause
                assert not response.will_close, pause
                assert connection.sock is socket, "the connection was not the same one"
        finally:
            connection.close()


def test_faq_serve_takes_its_keep_alive_from_the_setting() -> None:
    args = argparse.Namespace(bind="127.0.0.1:0")
    assert hypercorn_config(args, Settings()).keep_alive_timeout == 75
    settings = Settings(faq_keep_alive_seconds=120)
    assert hypercorn_config(args, settings).keep_alive_timeout == 120
