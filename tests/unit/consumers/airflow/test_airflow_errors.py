"""The metrics label of a failed call to Airflow, shared by the bridge and the forwarder."""

from __future__ import annotations

import pytest

from assetbus.consumers.airflow.errors import (
    AirflowAuthError,
    AirflowNotFound,
    AirflowRefused,
    AirflowTokenRefused,
    AirflowUnavailable,
    error_kind,
)


@pytest.mark.parametrize(("error", "kind"), [
    (AirflowAuthError("401"), "auth"),
    (AirflowTokenRefused("401"), "auth"),
    (AirflowNotFound("404"), "not_found"),
    (AirflowUnavailable("503"), "unavailable"),
    (AirflowRefused("422"), "refused"),
    (OSError("reset"), "other"),
])
def test_each_failure_has_its_label(error: BaseException, kind: str) -> None:
    assert error_kind(error) == kind
