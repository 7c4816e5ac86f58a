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
    from assetbus.contract.documents import stale_documents, write_documents

    if check:
        stale = stale_documents(docs)
        if stale:
            fail(f"stale contract documents under {docs}: {', '.join(stale)}; run `assetbus contract export`")
        console.print(f"contract documents under {docs} are up to date")
        return
    written = write_documents(docs)
    console.print(f"wrote {', '.join(written)}" if written else f"contract documents under {docs} were up to date")


@app.command("check")
def check_compat(snapshot: Annotated[Path | None, typer.Option(
        "--snapshot", help="Folder of the released JSON Schemas (default: the newest under schemas/snapshots/).")
        ] = None) -> None:
    """Compare the JSON Schemas with the last released snapshot; exit code 1 on a breaking change without a
    schema_version bump."""
    from assetbus.contract.compat import check_against_snapshot, latest_snapshot, load_snapshot
    from assetbus.schemas import json_schemas

    try:
        folder = snapshot if snapshot is not None else latest_snapshot()
        released = load_snapshot(folder)
    except FileNotFoundError as error:
        fail(f"{error} (run from the repository root, or pass --snapshot)")
    result = check_against_snapshot(released, json_schemas())
    for change in result.breaking:
        console.print(f"breaking: {change}")
    if not result.ok:
        fail(f"{len(result.breaking)} breaking change(s) against {folder} with schema_version still "
             f"{result.current_version}: bump SCHEMA_VERSION (docs/contract.md)")
    if result.breaking:
        console.print(f"breaking changes against {folder}, under schema_version {result.released_version} -> "
                      f"{result.current_version}")
    else:
        console.print(f"no breaking change against {folder} (schema_version {result.current_version})")
