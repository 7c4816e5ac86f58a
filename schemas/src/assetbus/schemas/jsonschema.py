"""Export the contract as JSON Schema documents, for non-Python clients."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from assetbus.schemas.commands import EmissionCommand
from assetbus.schemas.events import AssetEvent
from assetbus.schemas.readiness import ReadinessSignal
from assetbus.schemas.receipts import Receipt

MESSAGES: dict[str, type[BaseModel]] = {
    model.__name__: model for model in (EmissionCommand, Receipt, AssetEvent, ReadinessSignal)}


def json_schemas() -> dict[str, dict[str, Any]]:
    """One JSON Schema per wire message, by message name."""
    return {name: model.model_json_schema() for name, model in MESSAGES.items()}
