"""Log lines are machine-readable: key=value pairs or one JSON object, with the `extra=` fields."""

from __future__ import annotations

import json
import logging

from assetbus.consumers.observe.logs import JsonFormatter, KeyValueFormatter


def record(**extra: object) -> logging.LogRecord:
    made = logging.LogRecord("assetbus.persister", logging.WARNING, __file__, 1, "dead letter", None, None)
    made.__dict__.update(extra)
    return made


def test_key_value_lines_quote_what_needs_quoting() -> None:
    line = KeyValueFormatter().format(record(reason="not_json", source_offset=17, error='bad "x"'))
    assert 'level=WARNING logger=assetbus.persister msg="dead letter" reason=not_json source_offset=17' in line
    assert 'error="bad \\"x\\""' in line
    assert line.startswith("ts=") and "\n" not in line


def test_json_lines_parse_back_with_every_field() -> None:
    fields = json.loads(JsonFormatter().format(record(reason="not_json", source_partition=2)))
    assert fields["msg"] == "dead letter" and fields["reason"] == "not_json" and fields["source_partition"] == 2
