"""`assetbus contract export [--check]`: the AsyncAPI, OpenAPI and JSON Schema documents in docs/."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assetbus.cli.common import console, fail

app = typer.Typer(help="Contract documents: AsyncAPI (topics), OpenAPI (HTTP API), JSON Schemas (messages).",
                  no_args_is_help=True)


@app.command("export")
def export(docs: Annotated[Path, typer.Option("--docs", help="Folder the documents go to.")] = Path("docs"),
           check: bool = typer.Option(False, "--check", help="Change nothing; exit code 1 if a document is stale.")
           ) -> None:
    """Generate docs/asyncapi.yaml, docs/openapi.json and docs/schemas/*.json from the code."""
    from assetbus.contract import stale_documents, write_documents

    if check:
        stale = stale_documents(docs)
        if stale:
            fail(f"stale contract documents under {docs}: {', '.join(stale)}; run `assetbus contract export`")
        console.print(f"contract documents under {docs} are up to date")
        return
    written = write_documents(docs)
    console.print(f"wrote {', '.join(written)}" if written else f"contract documents under {docs} were up to date")
