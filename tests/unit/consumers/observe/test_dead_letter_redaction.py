"""What is shown of a dead letter hides tokens: JWT-looking values and `token` fields read "<redacted>"."""

from __future__ import annotations

import json

from assetbus.consumers.observe.deadletters import PREVIEW_BYTES, REDACTED, dead_letter, redact
from assetbus.producers import SigningKey, task_token

SECRET = "redaction-test-secret-of-at-least-32-bytes"


def test_a_token_field_and_a_bare_jwt_are_redacted_and_the_rest_is_kept() -> None:
    token = task_token(SECRET, "ingest", "r1", "load")
    eddsa = task_token(SigningKey.generate("EdDSA"), "ingest", "r1", "load")
    text = json.dumps({"token": token, "access_token": "opaque-secret", "asset": {"name": "orders"},
                       "extra": {"note": f"Bearer {eddsa} was here"}})
    shown = redact(text)
    assert token not in shown and eddsa not in shown and "opaque-secret" not in shown
    assert json.loads(shown) == {"token": REDACTED, "access_token": REDACTED, "asset": {"name": "orders"},
                                 "extra": {"note": f"Bearer {REDACTED} was here"}}


def test_dotted_names_versions_and_non_string_token_fields_are_left_alone() -> None:
    text = ('{"uri": "s3://bucket.s3.amazonaws.com/orders/", "topic": "assetbus.emissions.dlq", '
            '"version": "1.22.333", "host": "kafka-0.kafka.svc.cluster.local", "token": null, "token_count": 3}')
    assert redact(text) == text


def test_a_token_cut_off_by_the_preview_is_still_redacted() -> None:
    token = task_token(SECRET, "ingest", "r1", "load")
    cut = '{"command_id": "c1", "token": "' + token[: len(token) // 2]
    assert redact(cut) == '{"command_id": "c1", "token": "<redacted>"'
    signature_cut = "value: " + token[: token.rindex(".") + 3]  # header, payload and part of the signature
    assert redact(signature_cut) == f"value: {REDACTED}"


def test_the_preview_and_the_headers_of_a_dead_letter_are_redacted() -> None:
    token = task_token(SECRET, "ingest", "r1", "load")
    value = ('{"token": "' + token + '", "asset": ').encode() + b"x" * (PREVIEW_BYTES * 2)
    headers = [("assetbus.dlq.reason", b"not_json"), ("assetbus.dlq.error", f"bad input near {token}".encode())]
    record = dead_letter("t.dlq", 0, 0, 0, b"orders", value, headers)
    assert token not in record.value_preview and record.value_preview.startswith('{"token": "<redacted>", "asset"')
    assert record.error == f"bad input near {REDACTED}" and token not in str(record.headers)
    assert record.value_size == len(value)
