"""The contract check: the JSON Schemas against the last released snapshot, and the comparer itself."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assetbus.contract.compat import (
    SNAPSHOTS,
    breaking_changes,
    check_against_snapshot,
    compare_schemas,
    latest_snapshot,
    load_snapshot,
)
from assetbus.schemas import SCHEMA_VERSION, SUPPORTED_SCHEMA_VERSIONS, json_schemas

ROOT = Path(__file__).resolve().parents[3]


def test_the_contract_has_no_breaking_change_without_a_version_bump() -> None:
    """The CI check: fails on a removed property, a newly required one, a narrowed type or enum, a tightened
    constraint against the last released snapshot, unless SCHEMA_VERSION went up."""
    result = check_against_snapshot(load_snapshot(latest_snapshot(ROOT / SNAPSHOTS)), json_schemas())
    assert result.ok, [str(b) for b in result.breaking]
    assert result.current_version == SCHEMA_VERSION
    assert result.released_version in SUPPORTED_SCHEMA_VERSIONS, "the persister must still read the released version"


def test_the_snapshot_holds_every_message() -> None:
    assert set(load_snapshot(latest_snapshot(ROOT / SNAPSHOTS))) == set(json_schemas())


def test_the_newest_snapshot_is_found_by_number(tmp_path: Path) -> None:
    for name in ("0.2.0", "0.10.0", "0.9.1"):
        (tmp_path / name).mkdir()
    assert latest_snapshot(tmp_path).name == "0.10.0"


BASE: dict[str, Any] = {
    "$defs": {
        "Kind": {"enum": ["task", "dag"], "type": "string"},
        "Ref": {"properties": {"name": {"maxLength": 100, "minLength": 1, "type": "string"}},
                "required": ["name"], "type": "object"},
    },
    "properties": {
        "schema_version": {"default": 1, "type": "integer"},
        "name": {"maxLength": 200, "minLength": 1, "type": "string"},
        "kind": {"$ref": "#/$defs/Kind"},
        "ref": {"$ref": "#/$defs/Ref"},
        "count": {"anyOf": [{"minimum": 0, "type": "integer"}, {"type": "null"}], "default": None},
        "tags": {"items": {"type": "string"}, "type": "array"},
        "extra": {"additionalProperties": True, "type": "object"},
    },
    "required": ["name", "kind", "ref"],
    "type": "object",
}


Edit = Callable[[dict[str, Any]], object]
"""Changes a schema in place (what it returns is not used)."""


def changed(edit: Edit) -> dict[str, Any]:
    schema = copy.deepcopy(BASE)
    edit(schema)
    return schema


def props(schema: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = schema["properties"]
    return result


BREAKING: dict[str, Edit] = {
    "removed property": lambda s: props(s).pop("count"),
    "removed nested property": lambda s: s["$defs"]["Ref"]["properties"].pop("name"),
    "newly required property": lambda s: s["required"].append("count"),
    "type narrowed": lambda s: props(s).__setitem__("name", {"type": "integer"}),
    "null no longer accepted": lambda s: props(s).__setitem__("count", {"minimum": 0, "type": "integer"}),
    "enum narrowed": lambda s: s["$defs"]["Kind"].__setitem__("enum", ["task"]),
    "maxLength lowered": lambda s: props(s)["name"].__setitem__("maxLength", 50),
    "minLength raised": lambda s: s["$defs"]["Ref"]["properties"]["name"].__setitem__("minLength", 3),
    "minimum raised in an anyOf branch": lambda s: props(s)["count"]["anyOf"][0].__setitem__("minimum", 1),
    "maximum added": lambda s: props(s)["count"]["anyOf"][0].__setitem__("maximum", 10),
    "pattern added": lambda s: props(s)["name"].__setitem__("pattern", "^[a-z]+$"),
    "items type narrowed": lambda s: props(s)["tags"].__setitem__("items", {"type": "integer"}),
    "additional properties closed": lambda s: props(s)["extra"].__setitem__("additionalProperties", False),
    "required added in a nested object": lambda s: s["$defs"]["Ref"].__setitem__(
        "properties", {**s["$defs"]["Ref"]["properties"], "uri": {"type": "string"}}) or s["$defs"]["Ref"][
        "required"].append("uri"),
}


@pytest.mark.parametrize("kind", list(BREAKING))
def test_each_breaking_kind_is_caught(kind: str) -> None:
    found = compare_schemas("M", BASE, changed(BREAKING[kind]))
    assert found, kind


def test_the_finding_names_the_path_and_the_change() -> None:
    (removed,) = compare_schemas("M", BASE, changed(BREAKING["removed nested property"]))
    assert str(removed) == "M.ref.name: property removed"
    (narrowed,) = compare_schemas("M", BASE, changed(BREAKING["enum narrowed"]))
    assert str(narrowed) == "M.kind: enum narrowed: ['dag'] removed"


COMPATIBLE: dict[str, Edit] = {
    "unchanged": lambda s: None,
    "optional property added": lambda s: props(s).__setitem__(
        "traceparent", {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}),
    "optional nested property added": lambda s: s["$defs"]["Ref"]["properties"].__setitem__(
        "uri", {"type": "string"}),
    "requirement dropped": lambda s: s["required"].remove("kind"),
    "enum widened": lambda s: s["$defs"]["Kind"].__setitem__("enum", ["task", "dag", "asset"]),
    "null now accepted": lambda s: props(s).__setitem__(
        "name", {"anyOf": [{"maxLength": 200, "minLength": 1, "type": "string"}, {"type": "null"}]}),
    "maxLength raised": lambda s: props(s)["name"].__setitem__("maxLength", 400),
    "minimum dropped": lambda s: props(s)["count"]["anyOf"][0].pop("minimum"),
    "integer widened to number": lambda s: props(s)["count"]["anyOf"][0].__setitem__("type", "number"),
    "description changed": lambda s: props(s)["name"].__setitem__("description", "Something else."),
}


@pytest.mark.parametrize("kind", list(COMPATIBLE))
def test_compatible_changes_pass(kind: str) -> None:
    assert compare_schemas("M", BASE, changed(COMPATIBLE[kind])) == []


def test_a_removed_message_is_breaking() -> None:
    assert [str(b) for b in breaking_changes({"A": BASE, "B": BASE}, {"A": BASE})] == ["B: message removed"]


def test_a_breaking_change_passes_only_with_a_version_bump() -> None:
    narrowed = changed(BREAKING["removed property"])
    same = check_against_snapshot({"M": BASE}, {"M": narrowed})
    assert same.breaking and not same.ok
    bumped = changed(lambda s: (BREAKING["removed property"](s), props(s)["schema_version"].__setitem__("default", 2)))
    assert check_against_snapshot({"M": BASE}, {"M": bumped}).ok


def test_a_real_model_change_is_caught() -> None:
    """On the exported schemas themselves: dropping a Receipt field and requiring another are both found."""
    current = json_schemas()
    receipt = copy.deepcopy(current["Receipt"])
    del receipt["properties"]["dedupe_key"]
    receipt["required"].append("event_id")
    found = {str(b) for b in compare_schemas("Receipt", current["Receipt"], receipt)}
    assert found == {"Receipt.dedupe_key: property removed", "Receipt.event_id: property newly required"}


def test_the_cli_check_fails_on_a_breaking_change_without_a_bump(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from assetbus.cli.main import app

    snapshot = tmp_path / "9.9.9"
    snapshot.mkdir()
    for name, schema in json_schemas().items():
        widened = copy.deepcopy(schema)
        if name == "Receipt":  # the release had a field this code no longer has
            widened["properties"]["retired"] = {"type": "string"}
        (snapshot / f"{name}.json").write_text(json.dumps(widened))
    result = CliRunner().invoke(app, ["contract", "check", "--snapshot", str(snapshot)])
    assert result.exit_code == 1, result.output
    assert "Receipt.retired: property removed" in result.output
    same = tmp_path / "same"
    same.mkdir()
    for name, schema in json_schemas().items():
        (same / f"{name}.json").write_text(json.dumps(schema))
    assert CliRunner().invoke(app, ["contract", "check", "--snapshot", str(same)]).exit_code == 0
