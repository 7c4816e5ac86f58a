"""`assetbus token issue | inspect`: mint and read emitter tokens for task attempts and DAG runs."""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

import typer

from assetbus.cli.common import fail, settings

app = typer.Typer(help="Emitter tokens (signed with ASSETBUS_TOKEN_SECRET, or the local generated key).",
                  no_args_is_help=True)


class Output(StrEnum):
    token = "token"
    json = "json"
    env = "env"


def _parse_outlet(text: str) -> dict[str, str]:
    name, sep, uri = text.partition("=")
    if not sep or not name or not uri:
        fail(f"--outlet {text!r} must be NAME=URI")
    return {"name": name, "uri": uri}


@app.command("issue")
def issue(
    dag: Annotated[str, typer.Option("--dag", help="DAG id.")],
    run_id: Annotated[str, typer.Option("--run", help="DAG run id.")],
    task: Annotated[str | None, typer.Option("--task", help="Task id; omit for a DAG-level (callback) token.")] = None,
    map_index: Annotated[int, typer.Option("--map-index", help="Map index of the task (-1: unmapped).")] = -1,
    try_number: Annotated[int, typer.Option("--try", help="Try number of the task attempt.")] = 1,
    ttl: Annotated[int, typer.Option("--ttl", help="Lifetime in seconds.")] = 24 * 3600,
    output: Annotated[Output, typer.Option("--format", help="token: the token alone; json: token, claims and "
                                           "expiry; env: `export` lines a task runner can eval.")] = Output.token,
    outlets: Annotated[list[str] | None, typer.Option("--outlet", help="NAME=URI of an asset the task declares "
                                                      "(repeatable; --format env only): emitting others is "
                                                      "refused.")] = None,
) -> None:
    """Mint a signed token for one task attempt (--task) or one DAG run's callbacks (no --task)."""
    import jwt

    from assetbus.producers.tokens import dag_token, task_token

    if ttl <= 0:
        fail("--ttl must be a positive number of seconds")
    if try_number < 1 or map_index < -1:
        fail("--try must be >= 1 and --map-index >= -1")
    if outlets and output is not Output.env:
        fail("--outlet goes with --format env (it sets ASSETBUS_OUTLETS for the task)")
    s = settings()
    if task is None:
        token = dag_token(s.token_secret, dag, run_id, ttl_seconds=ttl)
    else:
        token = task_token(s.token_secret, dag, run_id, task, map_index=map_index, try_number=try_number,
                           ttl_seconds=ttl)
    if output is Output.token:
        typer.echo(token)
    elif output is Output.json:
        claims = jwt.decode(token, options={"verify_signature": False})
        typer.echo(json.dumps({"token": token, "claims": claims,
                               "expires_at": datetime.fromtimestamp(claims["exp"], UTC).isoformat()}, indent=2))
    else:
        lines = {"ASSETBUS_TOKEN": token, "KAFKA_BOOTSTRAP_SERVERS": s.bootstrap_servers,
                 "ASSETBUS_TOPIC_PREFIX": s.topic_prefix}
        if outlets:
            lines["ASSETBUS_OUTLETS"] = json.dumps([_parse_outlet(o) for o in outlets])
        for name, value in lines.items():
            typer.echo(f"export {name}={shlex.quote(value)}")


@app.command("inspect")
def inspect(token: Annotated[str, typer.Argument(help="The token to read.")]) -> None:
    """Print a token's claims and whether this installation's key verifies it (exit code 1 if not)."""
    import jwt

    from assetbus.consumers.auth import TokenError, TokenVerifier

    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError as error:
        fail(f"not a token: {error}")
    try:
        TokenVerifier(settings().token_secret).verify(token)
        verdict = "valid"
    except TokenError as error:
        verdict = error.reason
    typer.echo(json.dumps({"claims": claims, "verified": verdict}, indent=2))
    if verdict != "valid":
        raise typer.Exit(1)
