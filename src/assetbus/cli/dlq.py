"""`assetbus dlq list | show | redrive`: what the persister could not read, and re-publishing it once fixed.

A redrive is recorded (`dlq_redrives`, unique per dead letter) in a transaction committed only after the
broker acknowledged the record, so no dead letter is redriven twice. `list` and `show` print values
redacted (an emission record carries its emitter's token); a redrive re-publishes the original bytes.
"""

from __future__ import annotations

import getpass
import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from assetbus.cli.common import JSON_OPTION, connect, console, fail, kafka_connection, run, settings
from assetbus.cli.output import print_json, print_rows

if TYPE_CHECKING:
    from assetbus.consumers.observe import DeadLetterRecord
    from assetbus.consumers.storage.redrives import RedriveRow

app = typer.Typer(help="Dead letters: list and show them, redrive one after it was fixed.", no_args_is_help=True)
log = logging.getLogger("assetbus.cli.dlq")

OFFSET = typer.Argument(..., help="Offset of the dead letter (see `assetbus dlq list`).")
PARTITION = typer.Option(0, "--partition", help="Partition of the dead-letter topic.")


def _topics() -> tuple[str, str]:
    from assetbus.schemas import Topics

    topics = Topics(prefix=settings().topic_prefix)
    return topics.emissions_dlq, topics.emissions


def _as_dict(letter: DeadLetterRecord, redrive: RedriveRow | None, value: bytes | None = None) -> dict[str, Any]:
    """`value`: the whole original value (show); without it, the first 80 characters. Both redacted."""
    from assetbus.consumers.observe.deadletters import redact

    text = letter.value_preview if value is None else redact(value.decode("utf-8", "replace"))
    source = f"{letter.source_topic}:{letter.source_partition}:{letter.source_offset}"
    return {"topic": letter.topic, "partition": letter.partition, "offset": letter.offset,
            "timestamp": letter.timestamp, "key": letter.key, "reason": letter.reason, "error": letter.error,
            "source": source, "value_size": letter.value_size,
            "value": text if value is not None or len(text) <= 80 else text[:77] + "...",
            **({"headers": {f"assetbus.dlq.{k}": v for k, v in letter.headers.items()}} if value is not None else {}),
            "redrive": None if redrive is None else {"at": redrive.redriven_at, "by": redrive.operator,
                                                     "to": f"{redrive.target_topic}:{redrive.target_partition}:"
                                                           f"{redrive.target_offset}",
                                                     "value": redrive.value_replaced, "note": redrive.note}}


async def _redrives(dlq_topic: str) -> dict[tuple[int, int], RedriveRow]:
    from assetbus.consumers.storage.redrives import list_redrives

    async with connect() as conn:
        return await list_redrives(conn, dlq_topic)


@app.command("list")
def list_(limit: int = typer.Option(100, "--limit", min=1, help="At most this many, newest first."),
          as_json: bool = JSON_OPTION) -> None:
    """Dead letters still on the topic, newest first: reason, where they came from, whether redriven."""
    from rich.markup import escape

    from assetbus.consumers.observe import read_dead_letters

    dlq_topic, _ = _topics()

    async def go() -> tuple[list[DeadLetterRecord], dict[tuple[int, int], RedriveRow]]:
        return await read_dead_letters(kafka_connection(), dlq_topic, limit=limit), await _redrives(dlq_topic)

    letters, redrives = run(go())
    found = [_as_dict(d, redrives.get((d.partition, d.offset))) for d in letters]
    print_rows(found, as_json, ("partition", "offset", "at (UTC)", "reason", "error", "source", "redriven"),
               lambda item: (str(item["partition"]), str(item["offset"]), f"{item['timestamp']:%Y-%m-%d %H:%M:%S}",
                             item["reason"], escape(item["error"]), item["source"],
                             "-" if item["redrive"] is None else f"{item['redrive']['at']:%Y-%m-%d %H:%M} → "
                                                                 f"{item['redrive']['to']}"),
               title=f"dead letters on {dlq_topic}")


async def _letter(partition: int, offset: int) -> tuple[DeadLetterRecord, bytes]:
    from assetbus.consumers.observe import read_dead_letter

    dlq_topic, _ = _topics()
    letter = await read_dead_letter(kafka_connection(), dlq_topic, partition, offset)
    if letter is None:
        fail(f"no dead letter at partition {partition}, offset {offset} of {dlq_topic} "
             "(see `assetbus dlq list`; old ones expire with the topic's retention)")
    return letter


@app.command("show")
def show(offset: int = OFFSET, partition: int = PARTITION, as_json: bool = JSON_OPTION) -> None:
    """One dead letter in full: headers, key and value, and its redrive if there was one."""

    async def go() -> tuple[DeadLetterRecord, bytes, dict[tuple[int, int], RedriveRow]]:
        letter, value = await _letter(partition, offset)
        return letter, value, await _redrives(letter.topic)

    letter, value, redrives = run(go())
    item = _as_dict(letter, redrives.get((partition, offset)), value)
    if as_json:
        print_json(item)
        return
    for name in ("topic", "partition", "offset", "timestamp", "key", "reason", "error", "source", "redrive"):
        console.print(f"[bold]{name:>9}[/]: {item[name] if item[name] is not None else '-'}", highlight=False)
    for header, text in item["headers"].items():
        console.print(f"[dim]   header[/] {header} = {text}", highlight=False)
    console.print("[bold]    value[/]:")
    typer.echo(item["value"])


@app.command("redrive")
def redrive(offset: int = OFFSET, partition: int = PARTITION,
            value_file: Annotated[Path | None, typer.Option(
                "--value-file", exists=True, dir_okay=False,
                help="Publish this file's bytes (the fixed command) instead of the original value.")] = None,
            note: str = typer.Option("", "--note", help="Why, for the redrive log."),
            as_json: bool = JSON_OPTION) -> None:
    """Re-publish a dead letter to the emissions topic, once: a second redrive of it is refused."""
    from assetbus.consumers.storage.redrives import claim_redrive, complete_redrive
    from assetbus.producers.kafka.producer import create_producer
    from assetbus.schemas.codecs import DeadLetter as Unreadable
    from assetbus.schemas.codecs import decode_command
    from assetbus.schemas.deadletters import REDRIVE_ID, REDRIVE_OF

    replacement = value_file.read_bytes() if value_file is not None else None
    operator = getpass.getuser()

    async def go() -> dict[str, Any]:
        letter, original = await _letter(partition, offset)
        value = original if replacement is None else replacement
        outcome = decode_command(value)  # a rejection is a normal answer; a value dead-lettered again is refused
        if isinstance(outcome, Unreadable):
            fail(f"this value would be dead-lettered again ({outcome.reason.value}: {outcome.detail}); "
                 "fix it and pass it with --value-file")
        _, emissions = _topics()
        sha = hashlib.sha256(value).hexdigest()
        async with connect(transaction=True) as conn:
            claimed = await claim_redrive(conn, dlq_topic=letter.topic, dlq_partition=partition, dlq_offset=offset,
                                          reason=letter.reason, target_topic=emissions, value_sha256=sha,
                                          replaced=replacement is not None, operator=operator, note=note)
            if claimed is None:
                earlier = (await _redrives(letter.topic))[(partition, offset)]
                where = f"{earlier.target_topic}:{earlier.target_partition}:{earlier.target_offset}"
                fail(f"dead letter {partition}:{offset} was redriven already, at "
                     f"{earlier.redriven_at:%Y-%m-%d %H:%M:%S} by {earlier.operator} to {where}; "
                     "nothing is redriven twice")
            headers = [(REDRIVE_OF, f"{letter.topic}:{partition}:{offset}".encode()),
                       (REDRIVE_ID, str(claimed).encode())]
            key = None if letter.key is None else letter.key.encode()
            async with create_producer(kafka_connection()) as producer:
                sent = await producer.send_and_wait(emissions, value, key=key, headers=headers)
            await complete_redrive(conn, claimed, sent.partition, sent.offset)
        done = {"redrive_id": claimed, "dead_letter": f"{letter.topic}:{partition}:{offset}", "reason": letter.reason,
                "to": f"{emissions}:{sent.partition}:{sent.offset}", "value": "replaced" if replacement else "original",
                "value_sha256": sha, "operator": operator, "note": note}
        log.warning("redrive %s", done)
        return done

    done = run(go())
    if as_json:
        print_json(done)
    else:
        console.print(f"redriven {done['dead_letter']} ({done['reason']}) → {done['to']} with the {done['value']} "
                      f"value; recorded as redrive {done['redrive_id']}", highlight=False)
