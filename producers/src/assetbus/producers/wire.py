"""A checked emission, ready for the wire.

`prepare()` runs every client-side check and fixes the command id (so every resend is the same
command). The contract's `CommandEncoder` (`assetbus.schemas.codecs`) turns a request into
EmissionCommand JSON without building a pydantic model.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from typing_extensions import Unpack

from assetbus.producers.errors import InvalidEmission
from assetbus.producers.ids import new_command_id
from assetbus.producers.options import SendOptions, check_options
from assetbus.producers.tokens import source_of
from assetbus.producers.validation import check_asset, check_key, check_partition, encode_extra
from assetbus.schemas.codecs import CommandEncoder, CommandFields
from assetbus.schemas.compat import UTC


@dataclass(slots=True)
class EmissionRequest(CommandFields):
    """One checked emission, not yet bound to a producer or token. Treat it as immutable: its
    command id is what makes every resend the same command. (Not frozen: frozen dataclasses
    cost a few microseconds more per emission.)"""

    timeout_s: float | None = None
    attempts: int | None = None


def prepare(asset: object, *, attempts: int | None = None, **options: Unpack[SendOptions]) -> EmissionRequest:
    """Check everything that can be checked before sending; raises InvalidEmission (TypeError for a
    keyword that is no option)."""
    check_options(options)
    extra, dedupe_key, timeout_s = options.get("extra"), options.get("dedupe_key"), options.get("timeout_s")
    partition_key, partition_date = options.get("partition_key"), options.get("partition_date")
    ref = check_asset(asset)
    checked, extra_json = encode_extra(extra)
    if partition_key is not None or partition_date is not None:
        check_partition(partition_key, partition_date)
    if dedupe_key is not None:
        check_key("dedupe_key", dedupe_key)
    if timeout_s is not None and not timeout_s > 0:
        raise InvalidEmission("timeout_s", "must be a positive number of seconds")
    return EmissionRequest(new_command_id(), ref, checked, extra_json, partition_key, partition_date, dedupe_key,
                           datetime.now(UTC), timeout_s, attempts)


def command_encoder(producer_id: str, reply_to: str, token: str) -> CommandEncoder:
    """The contract's fast EmissionCommand encoder for one producer and token (the source is the token's)."""
    return CommandEncoder(producer_id, reply_to, source_of(token), token)
