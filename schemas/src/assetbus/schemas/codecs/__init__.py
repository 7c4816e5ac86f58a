"""Every encoding and decoding of wire messages: a fast path per message type, the model as reference.

| message | fast encoder | reference encoder | decoder |
| --- | --- | --- | --- |
| EmissionCommand | `CommandEncoder` | `encode_command` | `read_command` (fast, with outcomes), `decode_command` |
| Receipt | `receipt_bytes`, `rejection_bytes` | `encode_receipt` | `decode_receipt` |
| AssetEvent | `event_bytes` | `encode_event` | `read_event` (fast, model fallback), `decode_event` |
| ReadinessSignal | `signal_bytes` (+ `triggering_event`) | `encode_signal` | `decode_signal` |

`tests/unit/schemas/codecs` holds each fast path to its model, in both directions. No I/O.
"""

from assetbus.schemas.codecs.command_outcomes import (
    DeadLetter,
    Rejection,
    decode_command,
    has_unstorable_text,
    is_topic_name,
    read_command,
)
from assetbus.schemas.codecs.command_reader import CommandView, SourceTuple, read_command_fast, source_tuple
from assetbus.schemas.codecs.commands import CommandEncoder, CommandFields, encode_command
from assetbus.schemas.codecs.event_reader import EventView, read_event, read_event_fast
from assetbus.schemas.codecs.events import decode_event, encode_event, event_bytes
from assetbus.schemas.codecs.readiness import (
    decode_signal,
    encode_signal,
    json_array,
    signal_bytes,
    source_dict,
    triggering_event,
    triggering_event_json,
)
from assetbus.schemas.codecs.receipts import decode_receipt, encode_receipt, receipt_bytes, rejection_bytes
from assetbus.schemas.codecs.text import (
    Fragments,
    compact_json,
    json_asset,
    json_datetime,
    json_str,
    plain_json,
    strict_json,
)

__all__ = ["CommandEncoder", "CommandFields", "CommandView", "DeadLetter", "EventView", "Fragments", "Rejection",
           "SourceTuple", "compact_json", "decode_command", "decode_event", "decode_receipt", "decode_signal",
           "encode_command", "encode_event", "encode_receipt", "encode_signal", "event_bytes", "has_unstorable_text",
           "is_topic_name", "json_array", "json_asset", "json_datetime", "json_str", "plain_json", "read_command",
           "read_command_fast", "read_event", "read_event_fast", "receipt_bytes", "rejection_bytes", "signal_bytes",
           "source_dict", "source_tuple", "strict_json", "triggering_event", "triggering_event_json"]
