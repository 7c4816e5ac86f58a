"""The request-body size limit, enforced before a route reads (and buffers) the body."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assetbus.consumers.api.errors import ApiErrorCode, ErrorBody, error_response

DRAIN_MAX_BYTES = 64 * 1024 * 1024
"""The most of a refused body read (and discarded) so that its 413 arrives; a larger one is cut off."""


class BodyLimitMiddleware:
    """Answers 413 `body_too_large` for a body over `max_bytes`, declared or streamed.

    The body is read (at most `max_bytes`) before the app runs and handed over in one piece. A refused
    body is read to its end and discarded before the 413 is sent (up to DRAIN_MAX_BYTES): a server
    that closes a socket with unread bytes in it resets the connection, and a client still sending
    (a keep-alive connection, a streamed body) sees the reset instead of the answer.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = next((value for name, value in scope["headers"] if name == b"content-length"), None)
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            if int(declared) <= DRAIN_MAX_BYTES:
                await self._drain(receive)
            await self._reject(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                await self.app(scope, replay([message]), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                if message.get("more_body", False):
                    await self._drain(receive)
                await self._reject(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, replay([{"type": "http.request", "body": b"".join(chunks), "more_body": False}],
                                      then=receive), send)

    async def _drain(self, receive: Receive) -> None:
        drained = 0
        while drained <= DRAIN_MAX_BYTES:
            message = await receive()
            if message["type"] != "http.request":
                return
            drained += len(message.get("body", b""))
            if not message.get("more_body", False):
                return

    async def _reject(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = ErrorBody(code=ApiErrorCode.BODY_TOO_LARGE, message=f"the request body exceeds {self.max_bytes} bytes")
        await error_response(413, body, {"Connection": "close"}, scope["path"])(scope, receive, send)


def replay(messages: list[Message], then: Receive | None = None) -> Receive:
    """A receive() that returns `messages` first, then defers to `then` (e.g. for disconnects)."""
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        if then is None:
            return {"type": "http.disconnect"}
        return await then()

    return receive
