"""The consumers' root exception. Driver errors are translated in `consumers.faults`."""

from __future__ import annotations


class ConsumerError(Exception):
    """Root of every error raised by the services. `retriable` marks transient faults."""

    retriable: bool = False

    def __init__(self, message: str, *, retriable: bool | None = None) -> None:
        super().__init__(message)
        if retriable is not None:
            self.retriable = retriable


class NotStarted(ConsumerError):
    """A service object was used before its `start()` (or after its `stop()`); `what` names the object."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is not running: call start() first")
        self.what = what


class StorageUnavailable(ConsumerError):
    """PostgreSQL cannot be reached or dropped the connection; retry after a back-off."""

    retriable = True
