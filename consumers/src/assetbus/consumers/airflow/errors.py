"""Errors of the Airflow integration: what Airflow answered, and whether trying again can help."""

from __future__ import annotations

from assetbus.consumers.errors import ConsumerError


class AirflowError(ConsumerError):
    """Airflow's REST API refused or failed a request. `status` is the HTTP status (None: no answer)."""

    def __init__(self, message: str, *, status: int | None = None, retriable: bool | None = None) -> None:
        super().__init__(message, retriable=retriable)
        self.status = status


class AirflowUnavailable(AirflowError):
    """Airflow did not answer, or answered 5xx / 429: back off and try again."""

    retriable = True


class AirflowAuthError(AirflowError):
    """Airflow refused the service account (401 after a fresh token, or 403): fix the credentials or roles.
    Retriable: the bridge keeps the signal and backs off, so fixing the account heals it, losing nothing."""

    retriable = True


class AirflowNotFound(AirflowError):
    """The DAG, run or task instance does not exist in Airflow (404)."""


class AirflowRefused(AirflowError):
    """Airflow answered 4xx to a request it will refuse again as it is (400, 422, ...)."""


class AirflowTokenRefused(AirflowAuthError):
    """Airflow refused the static token (`ASSETBUS_AIRFLOW_TOKEN`): it expired or was revoked. Not retriable:
    assetbus cannot renew a token it was handed; a new token is the fix."""

    retriable = False


def error_kind(error: BaseException) -> str:
    """The metrics label of a failed call to Airflow: auth, not_found, refused, unavailable, or other."""
    kinds = ((AirflowAuthError, "auth"), (AirflowNotFound, "not_found"), (AirflowRefused, "refused"),
             (AirflowError, "unavailable"))
    return next((kind for cls, kind in kinds if isinstance(error, cls)), "other")
