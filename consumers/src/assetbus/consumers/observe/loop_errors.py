"""The services' event-loop exception handler: a failed TLS connection is reported once, by the code that made it.

A TLS handshake that fails (an untrusted certificate, a refused SASL login torn down mid-handshake, a
broker closing the socket) raises to the code that opened the connection: aiokafka logs it, and the
start-up wait ends in one line naming the connection (`assetbus.producers.kafka.startup`). The event
loop can report the same failure a second time, with a traceback and no more to say:

- uvloop's SSL protocol keeps the handshake's exception in a future of `create_connection` that
  nobody awaits any more; when the cyclic collector frees it, asyncio logs `Future exception was
  never retrieved` with the `sslproto` traceback (the `untrusted-ca` case of the secure-listener test);
- uvloop's SSL protocol writes to the TCP transport of a connection already torn down, and reports
  the `RuntimeError: ... the handler is closed` as a "Fatal error on SSL protocol" (MagicStack/uvloop
  issues #68, #471; the `wrong-password` case).

`handle_loop_error` logs those second reports as one debug line each; `install` puts it on the CLI's service
loops (`assetbus.cli.event_loop`) and the API's uvicorn loop (its lifespan).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any

__all__ = ["handle_loop_error", "install"]

log = logging.getLogger("assetbus.loop")


def handle_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A failed TLS connection (an `ssl.SSLError`, however the loop reports it, or uvloop's write to its closed
    TCP transport) is one debug line; anything else goes to asyncio's default handler."""
    error = context.get("exception")
    message = str(context.get("message", ""))
    closed_transport_write = (isinstance(error, RuntimeError) and "the handler is closed" in str(error)
                              and "SSL" in message)
    if isinstance(error, ssl.SSLError) or closed_transport_write:
        log.debug("a failed TLS connection reported again by the event loop (%s): %s: %s",
                  message, type(error).__name__, error)
        return
    loop.default_exception_handler(context)


def install(loop: asyncio.AbstractEventLoop) -> asyncio.AbstractEventLoop:
    loop.set_exception_handler(handle_loop_error)
    return loop
