"""The storage layer: tables and queries. The only code in assetbus that writes SQL."""

from assetbus.consumers.faults import is_transient, translated
from assetbus.consumers.storage.catalog import AssetRow, assets_by_name, list_assets, register_asset
from assetbus.consumers.storage.engine import autocommit, create_engine, transaction, wait_for_database
from assetbus.consumers.storage.events import (
    InsertedEvent,
    NewEvent,
    ScopeKey,
    StoredEvent,
    count_events,
    find_events,
    insert_events,
)
from assetbus.consumers.storage.tables import metadata

__all__ = ["AssetRow", "InsertedEvent", "NewEvent", "ScopeKey", "StoredEvent", "assets_by_name", "autocommit",
           "count_events", "create_engine", "find_events", "insert_events", "is_transient", "list_assets", "metadata",
           "register_asset", "transaction", "translated", "wait_for_database"]
