"""The fast command reader agrees with the contract's model on every input."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assetbus.schemas import AssetRef, EmissionCommand, Provenance, SourceKind
from assetbus.schemas.codecs import CommandView, DeadLetter, Rejection, decode_command, read_command, read_command_fast

TASK = Provenance(kind=SourceKind.TASK, dag_id="d", run_id="r", task_id="t", map_index=-1, try_number=1)


def body(**changes: Any) -> dict[str, Any]:
    base = EmissionCommand(command_id=uuid.uuid4(), producer_id="p", reply_to="replies",
                           asset=AssetRef(name="a", uri="u"), source=TASK, token="t", extra={"n": 1},
                           partition_key="2026-10-01", dedupe_key="k",
                           emitted_at=datetime.now(UTC)).model_dump(mode="json")
    base.update(changes)
    return base


def test_a_valid_command_reads_the_same_on_both_paths() -> None:
    raw = json.dumps(body()).encode()
    fast = read_command_fast(raw)
    assert fast is not None
    assert fast == CommandView.of(EmissionCommand.model_validate_json(raw))


def test_the_fast_path_reads_optional_fields_too() -> None:
    raw = json.dumps(body(partition_date="2026-10-01T00:00:00+02:00", dedupe_key=None)).encode()
    fast = read_command_fast(raw)
    assert fast is not None and fast.partition_date is not None and fast.dedupe_key is None


def test_provenance_has_no_model_rule_the_fast_path_does_not_apply() -> None:
    """If this fails, a validator was added to the contract: teach `read_command_fast` the same rule."""
    assert set(Provenance.__pydantic_decorators__.model_validators) == {"_task_fields_match_kind"}
    assert not EmissionCommand.__pydantic_decorators__.model_validators
    assert not AssetRef.__pydantic_decorators__.model_validators
    assert not any(m.__pydantic_decorators__.field_validators for m in (EmissionCommand, AssetRef, Provenance))


json_scalars = st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False) | st.text(max_size=12)
mutations = st.sampled_from([
    ("schema_version", st.sampled_from([1, 2, True, "1", 1.0, None])),
    ("command_id", st.sampled_from([str(uuid.uuid4()), uuid.uuid4().hex, "nope", 7])),
    ("producer_id", st.text(max_size=3) | st.just("x" * 201)),
    ("reply_to", st.sampled_from(["r", "has space", "", "x" * 250])),
    ("asset", st.sampled_from([{"name": "a", "uri": "u"}, {"name": "", "uri": "u"}, {"name": "a"}, "a",
                               {"name": "a", "uri": "u", "more": 1}])),
    ("source", st.sampled_from([TASK.model_dump(mode="json"), {**TASK.model_dump(mode="json"), "task_id": None},
                                {"kind": "dag", "dag_id": "d", "run_id": "r"},
                                {"kind": "dag", "dag_id": "d", "run_id": "r", "map_index": -1},
                                {**TASK.model_dump(mode="json"), "kind": "other"},
                                {**TASK.model_dump(mode="json"), "try_number": 0}])),
    ("token", st.sampled_from(["", "t", 5])),
    ("extra", st.dictionaries(st.text(max_size=4), json_scalars, max_size=3) | json_scalars),
    ("partition_key", st.sampled_from(["", "k", None, 3, "x" * 251])),
    ("partition_date", st.sampled_from([None, "2026-10-01T00:00:00Z", "2026-10-01T00:00:00", "yesterday", 0])),
    ("dedupe_key", st.sampled_from([None, "", "k", "x" * 251])),
    ("emitted_at", st.sampled_from(["2026-10-01T00:00:00Z", "nope", None])),
])


@settings(max_examples=400)
@given(st.lists(st.tuples(mutations, st.data()), max_size=4), st.booleans())
def test_both_paths_give_every_mutated_command_the_same_outcome(
        changes: list[tuple[tuple[str, st.SearchStrategy[Any]], st.DataObject]], drop: bool) -> None:
    data = body()
    for (field, values), draw in changes:
        data[field] = draw.draw(values)
    if drop and changes:
        data.pop(changes[0][0][0], None)
    raw = json.dumps(data).encode()
    slow = decode_command(raw)
    fast = read_command(raw)
    if isinstance(slow, EmissionCommand):
        assert fast == CommandView.of(slow)
    else:
        assert isinstance(fast, (Rejection, DeadLetter)) and fast == slow
