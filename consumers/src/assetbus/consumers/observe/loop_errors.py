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

`handle_loop_error` is the one place that tells those second reports apart, whatever the message that
carries them, and logs each as one debug line; every other loop error goes to asyncio's default
handler as before. `install` puts it on a loop: the CLI's service loops (`assetbus.cli.event_loop`)
and the API's uvicorn loop (its lifespan) run with it.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any

__all__ = ["handle_loop_error", "install"]

log = logging.getLogger("assetbus.loop")


def handle_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's exception handler: a failed TLS connection (its handshake refused, an `ssl.SSLError` such as
    `SSLCertVerificationError`, however the loop reports it; or uvloop's write to its already closed TCP
    transport) is one debug line, as the code that opened the connection has reported it; anything else is
    reported by asyncio's default handler."""
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
    """Set `handle_loop_error` as `loop`'s exception handler; returns the loop."""
    loop.set_exception_handler(handle_loop_error)
    return loop
