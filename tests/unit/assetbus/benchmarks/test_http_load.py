"""The API benchmark's load generator against a tiny HTTP server: counts, statuses, keep-alive."""

from __future__ import annotations

import asyncio

from assetbus.benchmarks.api_layers import layer_of, summarize
from assetbus.benchmarks.http_load import LoadSpec, drive, http_request


async def test_every_request_is_answered_on_its_keep_alive_connection() -> None:
    connections = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length")), 0)
            body = await reader.readexactly(length)
            status = b"404 Not Found" if b"/missing" in head else b"200 OK"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    requests = [http_request("PUT", "/a", {"X": "1"}, b'{"v": 1}'), http_request("GET", "/missing", {})]
    async with server:
        result = await drive(LoadSpec("127.0.0.1", port, concurrency=3, count=10, requests=requests))
    assert len(result.latencies_ms) == 10
    assert result.unexpected == {"404": 5}  # every second request
    assert connections == 3
    assert result.elapsed_s > 0


def test_a_sample_belongs_to_the_innermost_layer_that_is_not_the_loops_plumbing() -> None:
    db = "run (asyncio/runners.py:1);handle (uvicorn/protocols/http.py:2);get (asyncpg/connection.py:3);" \
         "write (asyncio/selector_events.py:4)"
    server = "run (asyncio/runners.py:1);send (uvicorn/protocols/http.py:2);write (asyncio/selector_events.py:4)"
    assert layer_of(db) == "database (SQLAlchemy, asyncpg, TLS)"
    assert layer_of(server) == "HTTP server (uvicorn, h11/httptools)"
    assert layer_of("select (selectors.py:1)") == "event loop and sockets (asyncio/uvloop)"
    total, counts = summarize([f"{db} 3\n", f"{server} 1\n", "garbage\n"])
    assert total == 4
    assert counts["database (SQLAlchemy, asyncpg, TLS)"] == 3
