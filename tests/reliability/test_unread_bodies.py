"""A refused write whose body came in two TCP segments no longer drops the connection (issue
42): Hypercorn closed a keep-alive connection whose request body had not fully arrived when
the response ended, without ``Connection: close``, so the client's next request on it met
"Server disconnected without sending a response". Real ``faq serve``, raw sockets."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tests.fixtures.bounded import ApiProcess, api_process

pytestmark = pytest.mark.slow

BODY = b'{"name": "' + b"x" * 20_000 + b'"}'


@pytest.fixture(scope="module")
def api() -> Iterator[ApiProcess]:
    with api_process() as process:
        yield process


def connect(api: ApiProcess) -> socket.socket:
    host, port = api.base_url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def head(length: int, path: str = "/api/v1/no-such-org/categories") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer faq_not_a_key\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65_536)
        if not chunk:
            raise ConnectionError("closed before a response")
        data += chunk
    raw_head, _, rest = data.partition(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65_536)
        if not chunk:
            raise ConnectionError("closed inside a response")
        rest += chunk
    return status, headers, rest[:length]


def test_a_refused_write_whose_body_arrives_late_keeps_the_connection(api: ApiProcess) -> None:
    for _ in range(5):
        sock = connect(api)
        try:
            sock.sendall(head(len(BODY)) + BODY[:100])  # the refusal needs no body
            time.sleep(0.2)  # the rest in a later segment, after the app has answered
            sock.sendall(BODY[100:])
            status, headers, _ = read_response(sock)
            assert status == 401
            assert headers.get("connection") != "close"
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")  # the same connection
            status, _, body = read_response(sock)
            assert status == 200, body
        finally:
            sock.close()


def test_a_body_too_long_to_drain_says_connection_close(api: ApiProcess) -> None:
    sock = connect(api)
    try:
        sock.sendall(head(8 * 2**20) + b"x" * 1000)  # 8 MiB announced: more than the limit
        status, headers, _ = read_response(sock)
        assert status in (401, 413)
        assert headers.get("connection") == "close"  # the client knows not to reuse it
    finally:
        sock.close()
