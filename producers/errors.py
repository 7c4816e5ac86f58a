"""The emitter SDK's exceptions. One root; data in attributes; `retriable` for transient faults."""

from __future__ import annotations

from schemas import ErrorCode, Receipt


class EmitterError(Exception):
    """Root of every error the emitter SDK raises."""

    retriable: bool = False


class ReceiptTimeout(EmitterError):
    """No receipt arrived in time, after all retries. The command may still be stored: emit again
    with the same dedupe key and the receipt will say `duplicate` if it was."""

    retriable = True

    def __init__(self, command_id: str, waited_s: float, attempts: int) -> None:
        super().__init__(f"no receipt for command {command_id} after {attempts} attempt(s) and {waited_s:.1f}s")
        self.command_id = command_id
        self.waited_s = waited_s
        self.attempts = attempts


class EmissionRejected(EmitterError):
    """The persister answered `rejected`; `code` says why (switch on it, not on the message)."""

    def __init__(self, receipt: Receipt) -> None:
        code = receipt.error_code or ErrorCode.INTERNAL
        super().__init__(f"{code.value}: {receipt.error_message or 'rejected'}")
        self.receipt = receipt
        self.code = code
        self.retriable = code is ErrorCode.INTERNAL
