"""The API's errors: one exception, one machine-readable body, and the handlers that render them."""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import Any
from uuid import UUID

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from assetbus.consumers.errors import ConsumerError, StorageUnavailable
from assetbus.consumers.storage.state import StateConflict
from assetbus.schemas import Receipt

log = logging.getLogger("assetbus.api")


class ApiErrorCode(StrEnum):
    """Why a request failed. Stable strings: clients switch on them, not on messages."""

    MISSING_TOKEN = "missing_token"
    INVALID_TOKEN = "invalid_token"
    INSUFFICIENT_SCOPE = "insufficient_scope"
    NOT_A_TASK_TOKEN = "not_a_task_token"
    WRONG_TASK_INSTANCE = "wrong_task_instance"
    ASSET_NOT_REGISTERED = "asset_not_registered"
    KEY_NOT_FOUND = "key_not_found"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    PRECONDITION_FAILED = "precondition_failed"
    VALUE_TOO_LARGE = "value_too_large"
    BODY_TOO_LARGE = "body_too_large"
    INVALID_REQUEST = "invalid_request"
    UNSUPPORTED_API_VERSION = "unsupported_api_version"
    STORAGE_UNAVAILABLE = "storage_unavailable"
    BROKER_UNAVAILABLE = "broker_unavailable"
    RECEIPT_TIMEOUT = "receipt_timeout"
    INTERNAL = "internal"
    AIRFLOW_NOT_CONFIGURED = "airflow_not_configured"
    AIRFLOW_UNAVAILABLE = "airflow_unavailable"
    ATTEMPT_NOT_RUNNING = "attempt_not_running"
    UNTRANSLATABLE_TIMETABLE = "untranslatable_timetable"
    NOT_AN_AIRFLOW_RULE = "not_an_airflow_rule"
    ATTEMPT_ENDED = "attempt_ended"
    ATTESTATION_REQUIRED = "attestation_required"
    CREDENTIAL_REVOKED = "credential_revoked"


class ErrorBody(BaseModel):
    """Every error response has this shape; new optional fields may be added."""

    code: str = Field(description="Machine-readable reason (an ApiErrorCode, or a receipt's error code).")
    message: str = Field(description="Human-readable explanation.")
    errors: list[dict[str, Any]] | None = Field(default=None, description="Field errors of a 422 response.")
    current_version: int | None = Field(default=None,
                                        description="412 only: the version stored now (null: the key is absent).")
    command_id: UUID | None = Field(default=None,
                                    description="Emit only: the command id; resend it to retry without duplicates.")
    receipt: Receipt | None = Field(default=None, description="Emit only: the persister's rejecting receipt.")


class StoreErrorDetail(BaseModel):
    """The `detail` of a state store error, shaped as Airflow 3.3's execution API shapes it."""

    reason: str = Field(description="Machine-readable reason (an ApiErrorCode).")
    message: str = Field(description="Human-readable explanation.")
    errors: list[dict[str, Any]] | None = Field(default=None, description="Field errors of a 422 response.")
    current_version: int | None = Field(default=None,
                                        description="412 only: the version stored now (null: the key is absent).")


class StoreErrorBody(BaseModel):
    """Every error of the state store routes (`/execution/store/…` and the `/execution/state/…` aliases)."""

    detail: StoreErrorDetail = Field(description="Why the request failed.")


class ApiError(ConsumerError):
    """An expected failure with its HTTP status; rendered as an ErrorBody."""

    def __init__(self, status: int, code: str, message: str, *, headers: dict[str, str] | None = None,
                 **fields: Any) -> None:
        super().__init__(message, retriable=status in (503, 504))
        self.status = status
        self.body = ErrorBody(code=code, message=message, **fields)
        self.headers = headers or {}


def error_response(status: int, body: ErrorBody, headers: dict[str, str] | None = None,
                   path: str = "") -> JSONResponse:
    """`body` as JSON; on a state store `path`, reshaped as `{"detail": {"reason", "message", ...}}`."""
    content = body.model_dump(mode="json", exclude_none=True)
    if path.startswith(("/execution/store/", "/execution/state/")):
        content = {"detail": {"reason": content.pop("code"), **content}}
    return JSONResponse(content, status_code=status, headers=headers)


def _answer(error: Exception) -> tuple[int, ErrorBody, dict[str, str] | None]:
    """The status, body and headers of the answer to `error` (anything unexpected is a 500)."""
    if isinstance(error, ApiError):
        return error.status, error.body, error.headers
    if isinstance(error, RequestValidationError):
        errors = [{"loc": [str(part) for part in e.get("loc", ())], "msg": str(e.get("msg", "")),
                   "type": str(e.get("type", ""))} for e in error.errors()]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        message = f"{'.'.join(first['loc'])}: {first['msg']}"[:500]
        return 422, ErrorBody(code=ApiErrorCode.INVALID_REQUEST, message=message, errors=errors), None
    if isinstance(error, StateConflict):
        current = error.current_version
        return (412, ErrorBody(code=ApiErrorCode.PRECONDITION_FAILED, message=str(error), current_version=current),
                {"ETag": etag(current)} if current is not None else None)
    if isinstance(error, StorageUnavailable):
        log.warning("storage unavailable: %s", error)
        return (503, ErrorBody(code=ApiErrorCode.STORAGE_UNAVAILABLE,
                               message="the database is unavailable; retry shortly"), {"Retry-After": "1"})
    if isinstance(error, StarletteHTTPException):
        code = {404: ApiErrorCode.NOT_FOUND, 405: ApiErrorCode.METHOD_NOT_ALLOWED}.get(error.status_code,
                                                                                       ApiErrorCode.INVALID_REQUEST)
        return error.status_code, ErrorBody(code=code, message=str(error.detail)), dict(error.headers or {})
    log.exception("unexpected error", exc_info=error)
    return 500, ErrorBody(code=ApiErrorCode.INTERNAL, message="internal error"), None


async def render_error(request: Request, error: Exception) -> JSONResponse:
    """The response the API gives `error`: its exception handler, and code that answers outside FastAPI's routing."""
    return error_response(*_answer(error), request.url.path)


def install_handlers(app: FastAPI) -> None:
    for kind in (ApiError, RequestValidationError, StateConflict, StorageUnavailable, StarletteHTTPException,
                 Exception):
        app.add_exception_handler(kind, render_error)


def etag(version: int) -> str:
    return f'"{version}"'


_DESCRIPTIONS = {
    400: "Unsupported or malformed `Assetbus-API-Version` header.",
    401: "Missing, forged, expired token or wrong audience.",
    403: "The token may not touch this task instance or asset, or lacks the scope.",
    404: "Unknown key, with the reason.",
    409: "The resource belongs to something else (a consumer DAG synced from a file, not from Airflow).",
    412: "Compare-and-set failed: the stored version is not the expected one.",
    413: "The value (or body) is larger than the limit.",
    422: "Malformed input (a state store value: null, NaN or Infinity, or larger than the limit).",
    503: "The database (or broker) is unavailable; retry.",
    504: "No receipt in time; resend with the same command_id.",
}


def responses(*statuses: int, store: bool = False) -> dict[int | str, dict[str, Any]]:
    """OpenAPI documentation of the error responses of a route (the common ones always included);
    `store`: a state store route, whose errors are StoreErrorBody."""
    wanted = sorted({400, 401, 413, 422, 503, *statuses})
    model = StoreErrorBody if store else ErrorBody
    return {status: {"model": model, "description": _DESCRIPTIONS[status]} for status in wanted}
