"""JSON pieces the fast encoders assemble messages from, written exactly as pydantic writes them.

Strings go through the C string escaper of `json` (non-ASCII stays UTF-8, as in pydantic's
output); datetimes through pydantic's own serializer (ISO 8601, `Z` for UTC), which is also the
fastest way to get pydantic's form. `Fragments` remembers pieces that repeat across many records.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from json.encoder import encode_basestring
from typing import Any

from pydantic_core import to_json

compact_json: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"),
                                                      allow_nan=False).encode
"""Compact JSON of plain values (dicts, lists, strings, numbers); refuses NaN and infinities."""


def _plain(value: Any, depth: int = 0) -> bool:
    """Only JSON's own types (exactly: no subclasses), str keys, finite floats, not too deep."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return bool(value - value == 0.0)  # NaN and the infinities give NaN
    if depth > 64:
        return False
    if kind is dict:
        return all(type(key) is str and _plain(item, depth + 1) for key, item in value.items())
    if kind is list:
        return all(_plain(item, depth + 1) for item in value)
    return False


def strict_json(value: Any) -> str:
    """`compact_json` at pydantic's speed: plain JSON values (dicts with str keys, lists, strings,
    ints, bools, None, finite floats) go through pydantic's serializer (3-5x faster); anything else
    through `compact_json`, which refuses what JSON cannot carry (NaN, datetimes, sets, ...) with
    TypeError or ValueError. Floats may be spelled differently (`1e-7` for `1e-07`), never valued so."""
    if _plain(value):
        try:
            return to_json(value).decode()
        except ValueError:  # e.g. a lone surrogate: let the standard encoder decide
            pass
    return compact_json(value)


CACHE_LIMIT = 10_000
"""Entries a `Fragments` cache holds before it starts over (bounded memory)."""


def plain_json(value: Any) -> str:
    """Compact JSON of values without floats (ids, strings, ISO dates), by pydantic's serializer: about
    4x `compact_json`. Not for `extra`: it writes NaN and infinities as null where `compact_json` refuses."""
    return to_json(value).decode()


def json_str(value: str | None) -> str:
    return "null" if value is None else encode_basestring(value)


def json_datetime(value: datetime | None) -> str:
    """Pydantic's JSON form of a datetime (or null)."""
    return "null" if value is None else to_json(value).decode()


def json_asset(name: str, uri: str) -> str:
    return f'{{"name":{encode_basestring(name)},"uri":{encode_basestring(uri)}}}'


class Fragments:
    """Serialized pieces shared by many records: assets and timestamps (bounded caches)."""

    def __init__(self) -> None:
        self._assets: dict[tuple[str, str], str] = {}
        self._times: dict[datetime, str] = {}
        self._sources: dict[tuple[Any, ...], str] = {}

    def source(self, source: dict[str, Any]) -> str:
        """A Provenance's JSON object (`source_dict` form: its six keys in order), by `plain_json`."""
        key = tuple(source.values())
        known = self._sources.get(key)
        return known if known is not None else _remember(self._sources, key, plain_json(source))

    def asset(self, name: str, uri: str) -> str:
        key = (name, uri)
        known = self._assets.get(key)
        return known if known is not None else _remember(self._assets, key, json_asset(name, uri))

    def time(self, value: datetime) -> str:
        known = self._times.get(value)
        return known if known is not None else _remember(self._times, value, json_datetime(value))


def _remember(cache: dict[Any, str], key: Any, value: str) -> str:
    """Keep `value` under `key`, starting the cache over when it is full (bounded memory)."""
    if len(cache) >= CACHE_LIMIT:
        cache.clear()
    cache[key] = value
    return value


class IsoTimes:
    """`isoformat()` of datetimes, formatted once per object while this lives (one batch of rows or
    signals): the same partition date or creation time recurs on many of a batch's rows. Keyed by
    identity, never by equality: equal instants in other zones format differently."""

    __slots__ = ("_formatted", "_kept")

    def __init__(self) -> None:
        self._formatted: dict[int, str] = {}
        self._kept: list[datetime] = []  # keeps each keyed object alive, so its id is not reused meanwhile

    def iso(self, when: datetime | None) -> str | None:
        if when is None:
            return None
        found = self._formatted.get(id(when))
        if found is None:
            found = self._formatted[id(when)] = when.isoformat()
            self._kept.append(when)
        return found
