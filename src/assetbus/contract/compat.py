"""Compare the wire contract's JSON Schemas with a released snapshot: which changes break a reader.

A change is *breaking* when a message valid under the released schema may be invalid under the new one, or
when a reader of the released schema relies on something the new one no longer promises (the list:
docs/contract.md, "The check in CI"). It is allowed only with a `schema_version` bump.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Breaking", "CheckResult", "breaking_changes", "check_against_snapshot", "compare_schemas",
           "latest_snapshot", "load_snapshot", "schema_version_of"]

Schema = dict[str, Any]

_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
"""A lower value, or a bound that was not there, rejects messages that passed."""
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
"""A higher value, or a bound that was not there, rejects messages that passed."""
_EXACT = ("pattern", "format", "const", "multipleOf")
"""Any new or changed value may reject messages that passed."""


@dataclass(frozen=True, slots=True)
class Breaking:
    """One breaking change: where (a message name and a path in it) and what."""

    message: str
    path: str
    change: str

    def __str__(self) -> str:
        return f"{self.message}{self.path or ''}: {self.change}"


def _resolve(node: Any, root: Schema) -> Any:
    """Follow a local `$ref` (`#/$defs/Name`), keeping any sibling keys (a description, say)."""
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/"):
        target: Any = root
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = {**{k: v for k, v in node.items() if k != "$ref"}, **target}
        seen += 1
        if seen > 50:
            raise ValueError(f"$ref cycle at {node.get('title', '?')}")
    return node


def _branches(node: Schema) -> list[Schema]:
    """A schema as its alternatives: the items of `anyOf`/`oneOf`, or the schema itself."""
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            return [b for b in node[key] if isinstance(b, dict)]
    return [node]


def _types(node: Schema) -> frozenset[str]:
    declared = node.get("type")
    if isinstance(declared, str):
        return frozenset({"number", "integer"} if declared == "number" else {declared})
    if isinstance(declared, list):
        kinds = {str(t) for t in declared}
        return frozenset(kinds | ({"integer"} if "number" in kinds else set()))
    return frozenset()  # untyped: anything


def _narrowed(old: Schema, new: Schema) -> bool:
    """Whether `new` is typed and takes not every type `old` takes (an untyped `old` takes anything)."""
    old_types, new_types = _types(old), _types(new)
    return bool(new_types) and (not old_types or not old_types <= new_types)


def _admits(new: Schema, old: Schema) -> bool:
    """Whether branch `new` takes the kind of value branch `old` takes (type first, then enum/const)."""
    return not _narrowed(old, new) and not ("enum" in new and "enum" not in old and "const" not in old)


def _compare(message: str, path: str, old: Any, new: Any, old_root: Schema, new_root: Schema,
             depth: int = 0) -> Iterator[Breaking]:
    old, new = _resolve(old, old_root), _resolve(new, new_root)
    if not isinstance(old, dict) or not isinstance(new, dict) or depth > 30:
        return
    if old == new:
        return
    old_branches, new_branches = _branches(old), _branches(new)
    if len(old_branches) > 1 or len(new_branches) > 1:
        for branch in old_branches:
            branch = _resolve(branch, old_root)
            matches = [b for b in (_resolve(n, new_root) for n in new_branches) if _admits(b, branch)]
            if not matches:
                yield Breaking(message, path, f"type narrowed: {_describe(branch)} is no longer accepted")
                continue
            yield from _compare(message, path, branch, matches[0], old_root, new_root, depth + 1)
        return
    yield from _compare_node(message, path, old, new, old_root, new_root, depth)


def _describe(node: Schema) -> str:
    if "enum" in node:
        return f"enum {node['enum']}"
    if "const" in node:
        return f"const {node['const']!r}"
    return "/".join(sorted(_types(node))) or "any value"


def _compare_node(message: str, path: str, old: Schema, new: Schema, old_root: Schema, new_root: Schema,
                  depth: int) -> Iterator[Breaking]:
    if _narrowed(old, new):
        old_types, new_types = _types(old), _types(new)
        lost = sorted(old_types - new_types) if old_types else ["any value"]
        yield Breaking(message, path, f"type narrowed: {', '.join(lost)} no longer accepted")
    if "enum" in new:
        if "enum" not in old:
            yield Breaking(message, path, f"enum added: only {new['enum']} accepted")
        else:
            removed = [v for v in old["enum"] if v not in new["enum"]]
            if removed:
                yield Breaking(message, path, f"enum narrowed: {removed} removed")
    for bounds, tighter in ((_UPPER_BOUNDS, operator.lt), (_LOWER_BOUNDS, operator.gt)):
        for key in bounds:
            if key in new and (key not in old or tighter(new[key], old[key])):
                yield Breaking(message, path, f"{key} tightened: {old.get(key, 'none')} -> {new[key]}")
    for key in _EXACT:
        if key in new and new.get(key) != old.get(key):
            yield Breaking(message, path, f"{key} changed: {old.get(key, 'none')!r} -> {new[key]!r}")
    old_props: Schema = old.get("properties", {})
    new_props: Schema = new.get("properties", {})
    for name in old_props:
        if name not in new_props:
            yield Breaking(message, f"{path}.{name}", "property removed")
        else:
            yield from _compare(message, f"{path}.{name}", old_props[name], new_props[name], old_root, new_root,
                                depth + 1)
    newly_required = sorted(set(new.get("required", [])) - set(old.get("required", [])))
    for name in newly_required:
        yield Breaking(message, f"{path}.{name}", "property newly required")
    old_extra, new_extra = old.get("additionalProperties", True), new.get("additionalProperties", True)
    if new_extra is False and old_extra is not False:
        yield Breaking(message, path, "additional properties no longer allowed")
    elif isinstance(new_extra, dict):
        yield from _compare(message, f"{path}.*", old_extra if isinstance(old_extra, dict) else {}, new_extra,
                            old_root, new_root, depth + 1)
    if "items" in new:
        yield from _compare(message, f"{path}[]", old.get("items", {}), new["items"], old_root, new_root,
                            depth + 1)


def compare_schemas(message: str, old: Schema, new: Schema) -> list[Breaking]:
    """The breaking changes from `old` to `new`, two JSON Schemas of one message."""
    return list(_compare(message, "", old, new, old, new))


def breaking_changes(released: dict[str, Schema], current: dict[str, Schema]) -> list[Breaking]:
    """The breaking changes of every message (a message that is gone is one)."""
    found: list[Breaking] = []
    for name, old in sorted(released.items()):
        if name not in current:
            found.append(Breaking(name, "", "message removed"))
        else:
            found.extend(compare_schemas(name, old, current[name]))
    return found


def schema_version_of(schema: Schema) -> int | None:
    """The `schema_version` a message schema declares (its default), if any."""
    default = schema.get("properties", {}).get("schema_version", {}).get("default")
    return default if isinstance(default, int) and not isinstance(default, bool) else None


SNAPSHOTS = Path("schemas/snapshots")
"""One folder per released version (`0.2.0/`), holding that release's docs/schemas/*.json."""


def latest_snapshot(root: Path = SNAPSHOTS) -> Path:
    """The folder of the newest release under `root` (versions compared as numbers)."""
    def key(path: Path) -> tuple[int, ...]:
        return tuple(int(part) if part.isdigit() else -1 for part in path.name.split("."))

    folders = sorted((p for p in root.iterdir() if p.is_dir()), key=key) if root.is_dir() else []
    if not folders:
        raise FileNotFoundError(f"no released snapshot under {root}")
    return folders[-1]


def load_snapshot(folder: Path) -> dict[str, Schema]:
    """The JSON Schemas of a released snapshot, by message name (the file's stem)."""
    schemas = {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))}
    if not schemas:
        raise FileNotFoundError(f"no JSON Schemas under {folder}")
    return schemas


@dataclass(frozen=True, slots=True)
class CheckResult:
    released_version: int | None
    current_version: int | None
    breaking: list[Breaking]

    @property
    def ok(self) -> bool:
        """No breaking change, or breaking changes under a bumped `schema_version`."""
        return not self.breaking or (self.current_version is not None and self.released_version is not None
                                     and self.current_version > self.released_version)


def check_against_snapshot(released: dict[str, Schema], current: dict[str, Schema]) -> CheckResult:
    """Compare, and read both sides' `schema_version` (the highest any message declares)."""
    def version(schemas: dict[str, Schema]) -> int | None:
        found = [v for v in (schema_version_of(s) for s in schemas.values()) if v is not None]
        return max(found) if found else None

    return CheckResult(version(released), version(current), breaking_changes(released, current))
