"""Errors of the state client. All are EmitterErrors (the SDK's one root); `code` is the server's."""

from __future__ import annotations

from assetbus.producers.errors import EmitterError


class StateError(EmitterError):
    """The execution API refused or failed a state operation. Switch on `code`, not on the message."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None,
                 retriable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.retriable = retriable


class StateUnauthorized(StateError):
    """401: the token is missing, forged, expired or for another audience."""


class StateForbidden(StateError):
    """403: the token may not touch this task instance or asset (or is not a task token)."""


class StateConflict(StateError):
    """412: compare-and-set failed; `current_version` is what is stored now (None: the key is absent)."""

    def __init__(self, message: str, *, current_version: int | None, code: str | None = None) -> None:
        super().__init__(message, status=412, code=code)
        self.current_version = current_version


class ValueTooLarge(StateError):
    """413: the value is larger than the server's limit (store references, not data)."""


class InvalidStateRequest(StateError):
    """422 (or 400): the key, value or a header is malformed."""


class StateUnavailable(StateError):
    """The API cannot be reached, or its database is down (5xx). Retrying later is safe."""

    retriable = True
