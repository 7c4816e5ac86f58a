"""`POST /execution/asset-events/emit`: an emission for notifiers and webhooks that cannot speak Kafka, answered
with the persister's receipt (docs/state.md, "Emitting over HTTP"); provenance comes from the bearer token.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response

from assetbus.consumers.api.database import app_state
from assetbus.consumers.api.errors import ApiError, responses
from assetbus.consumers.api.gateway import REJECTION_STATUS, EmissionGateway
from assetbus.consumers.api.models import EmitRequest
from assetbus.consumers.api.security import SCOPE_EMIT, CurrentCaller
from assetbus.consumers.api.versioning import version_header
from assetbus.schemas import ErrorCode, Receipt

PREFIX = "/execution/asset-events"
PATH = PREFIX + "/emit"

router = APIRouter(prefix=PREFIX, tags=["asset events"], dependencies=[Depends(version_header)])


@router.post("/emit", response_model=Receipt, responses=responses(403, 404, 504),
             summary="Emit an asset event and wait for its receipt")
async def emit(body: EmitRequest, caller: CurrentCaller,
               gateway: Annotated[EmissionGateway, Depends(app_state("gateway"))]) -> Receipt:
    caller.require(SCOPE_EMIT)
    if not caller.claims.may_publish(body.asset.name, body.asset.uri):  # the persister checks it too
        raise ApiError(403, ErrorCode.ASSET_NOT_DECLARED.value,
                       f"asset {body.asset.name!r} ({body.asset.uri}) is not declared in the token's publication "
                       f"policy: {', '.join(caller.claims.declared()) or 'none'}"[:1000])
    receipt = await gateway.emit(body, caller)
    if receipt.rejected:
        code = receipt.error_code or ErrorCode.INTERNAL
        raise ApiError(REJECTION_STATUS.get(code, 422), code.value, receipt.error_message or "rejected",
                       receipt=receipt, command_id=receipt.correlation_id)
    return receipt


def receipt_response(receipt: Receipt) -> Response:
    """The 200 answer as FastAPI renders the route's `response_model` (pydantic-core's JSON of the receipt, by
    alias), for code that answers outside FastAPI's routing (`api/fast_path.py`)."""
    return Response(receipt.__pydantic_serializer__.to_json(receipt, by_alias=True), media_type="application/json")
