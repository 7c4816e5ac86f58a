"""Moved to `assetbus.consumers.observe.logs` (shared by every service); this name stays as an alias."""

from assetbus.consumers.observe.logs import JsonFormatter, KeyValueFormatter, configure

__all__ = ["JsonFormatter", "KeyValueFormatter", "configure"]
