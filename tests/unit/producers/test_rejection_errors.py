"""A rejected receipt becomes the exception for its code, carrying the receipt."""

from __future__ import annotations

import uuid

import pytest

from assetbus.producers import (
    AssetNotDeclared,
    AssetNotFound,
    AttemptEnded,
    EmissionRejected,
    ExtraTooLarge,
    InsufficientScope,
    InternalError,
    InvalidCommand,
    InvalidPartition,
    Unauthorized,
    UnsupportedSchemaVersion,
    raise_for_rejection,
    rejection_error,
)
from assetbus.schemas import ErrorCode, Receipt, ReceiptStatus

EXPECTED = {
    ErrorCode.INVALID_COMMAND: InvalidCommand,
    ErrorCode.UNSUPPORTED_SCHEMA_VERSION: UnsupportedSchemaVersion,
    ErrorCode.ASSET_NOT_FOUND: AssetNotFound,
    ErrorCode.UNAUTHORIZED: Unauthorized,
    ErrorCode.ATTEMPT_ENDED: AttemptEnded,
    ErrorCode.INSUFFICIENT_SCOPE: InsufficientScope,
    ErrorCode.ASSET_NOT_DECLARED: AssetNotDeclared,
    ErrorCode.INVALID_PARTITION: InvalidPartition,
    ErrorCode.EXTRA_TOO_LARGE: ExtraTooLarge,
    ErrorCode.INTERNAL: InternalError,
}


def rejected(code: ErrorCode) -> Receipt:
    return Receipt(correlation_id=uuid.uuid4(), status=ReceiptStatus.REJECTED, error_code=code, error_message="no")


def test_every_error_code_has_its_own_exception_class() -> None:
    assert set(EXPECTED) == set(ErrorCode)


@pytest.mark.parametrize("code", list(ErrorCode))
def test_a_rejection_raises_the_class_of_its_code_with_the_receipt(code: ErrorCode) -> None:
    receipt = rejected(code)
    error = rejection_error(receipt)
    assert type(error) is EXPECTED[code] and isinstance(error, EmissionRejected)
    assert error.code is code and error.receipt is receipt
    assert str(error).startswith(code.value)


def test_only_internal_rejections_are_retriable() -> None:
    assert rejection_error(rejected(ErrorCode.INTERNAL)).retriable
    assert not rejection_error(rejected(ErrorCode.UNAUTHORIZED)).retriable


def test_raise_for_rejection_passes_accepted_receipts_through() -> None:
    accepted = Receipt(correlation_id=uuid.uuid4(), status=ReceiptStatus.ACCEPTED, event_id=1)
    assert raise_for_rejection(accepted) is accepted
    with pytest.raises(AssetNotFound):
        raise_for_rejection(rejected(ErrorCode.ASSET_NOT_FOUND))


def test_a_subclass_without_a_code_keeps_its_parent_s_and_takes_no_code_over() -> None:
    class Mine(Unauthorized):
        pass

    assert Mine.code is ErrorCode.UNAUTHORIZED
    assert type(rejection_error(rejected(ErrorCode.UNAUTHORIZED))) is Unauthorized
