"""The storage layer: tables and queries. The only code in assetbus that writes SQL."""

from consumers.storage.assets import AssetRow, assets_by_name, list_assets, register_asset
from consumers.storage.engine import create_engine
from consumers.storage.events import NewEvent, StoredEvent, count_events, insert_events
from consumers.storage.faults import is_transient, translated
from consumers.storage.tables import metadata

__all__ = [
    "AssetRow",
    "NewEvent",
    "StoredEvent",
    "assets_by_name",
    "count_events",
    "create_engine",
    "insert_events",
    "is_transient",
    "list_assets",
    "metadata",
    "register_asset",
    "translated",
]
