"""`assetbus demo`: the end-to-end story on the configured (or local) Kafka and PostgreSQL."""

from __future__ import annotations

from rich.table import Table

from assetbus.cli.common import console, fail, run, settings
from assetbus.demo import run_demo
from schemas import Receipt, ReceiptStatus

_STYLE = {ReceiptStatus.ACCEPTED: "green", ReceiptStatus.DUPLICATE: "yellow", ReceiptStatus.REJECTED: "red"}


def demo() -> None:
    """Register an asset, emit three times (new, repeat, unknown asset) and print the receipts."""
    table = Table("emission", "status", "event id", "stored at", "error code", title="receipts")

    def show(label: str, receipt: Receipt) -> None:
        console.print(f"  {label}: [{_STYLE[receipt.status]}]{receipt.status.value}[/]")
        table.add_row(label, f"[{_STYLE[receipt.status]}]{receipt.status.value}[/]",
                      str(receipt.event_id or "-"), receipt.timestamp.isoformat() if receipt.timestamp else "-",
                      receipt.error_code.value if receipt.error_code else "-")

    console.print("emitting through Kafka → persister → PostgreSQL ...")
    try:
        receipts = run(run_demo(settings(), show))
    except Exception as error:
        fail(f"demo failed: {type(error).__name__}: {error}")
    console.print(table)
    expected = [ReceiptStatus.ACCEPTED, ReceiptStatus.DUPLICATE, ReceiptStatus.REJECTED]
    if [r.status for r in receipts] != expected or receipts[0].event_id != receipts[1].event_id:
        fail("the receipts are not the expected accepted / duplicate (same event) / rejected")
    console.print("[green]ok[/]: the duplicate names the original event; the unknown asset was rejected "
                  f"with {receipts[2].error_code}")
