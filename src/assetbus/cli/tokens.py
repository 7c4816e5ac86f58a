"""`assetbus token issue | worker | revoke | operator | subscriber | inspect | keygen`: mint and read emitter,
worker, operator and subscriber tokens, revoke one, make signing keys."""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from assetbus.cli.common import fail, settings, signing_key

if TYPE_CHECKING:
    from assetbus.producers.tokens import Publication

app = typer.Typer(help="Emitter tokens (signed with ASSETBUS_TOKEN_SIGNING_KEY, or the local mode's secret).",
                  no_args_is_help=True)


Output = Literal["token", "json", "env"]


def _parse_outlet(text: str) -> dict[str, str]:
    name, sep, uri = text.partition("=")
    if not sep or not name or not uri:
        fail(f"--outlet {text!r} must be NAME=URI")
    return {"name": name, "uri": uri}


def _echo(token: str, output: Output, env: dict[str, str]) -> None:
    """Print the token alone, (json) with its claims and expiry, or (env) as the `export` lines of `env`."""
    if output == "env":
        for name, value in env.items():
            typer.echo(f"export {name}={shlex.quote(value)}")
        return
    if output == "token":
        typer.echo(token)
        return
    import jwt

    claims = jwt.decode(token, options={"verify_signature": False})
    typer.echo(json.dumps({"token": token, "claims": claims,
                           "expires_at": datetime.fromtimestamp(claims["exp"], UTC).isoformat()}, indent=2))


@app.command("issue")
def issue(
    dag: Annotated[str, typer.Option("--dag", help="DAG id.")],
    run_id: Annotated[str, typer.Option("--run", help="DAG run id.")],
    task: Annotated[str | None, typer.Option("--task", help="Task id; omit for a DAG-level (callback) token.")] = None,
    map_index: Annotated[int, typer.Option("--map-index", help="Map index of the task (-1: unmapped).")] = -1,
    try_number: Annotated[int, typer.Option("--try", help="Try number of the task attempt.")] = 1,
    ttl: Annotated[int | None, typer.Option("--ttl", help="Lifetime in seconds (default: the SDK's "
                                            "DEFAULT_TTL_SECONDS, 15 minutes).")] = None,
    not_after: Annotated[int | None, typer.Option("--not-after", help="End of the attempt (seconds since the "
                                                  "epoch): no refresh of the token outlives it.")] = None,
    output: Annotated[Output, typer.Option("--format", help="token: the token alone; json: token, claims and "
                                           "expiry; env: `export` lines a task runner can eval.")] = "token",
    outlets: Annotated[list[str] | None, typer.Option("--outlet", help="NAME=URI of an asset the token may "
                                                      "publish (repeatable; signed into its `publish` claim). "
                                                      "Without --outlet: any registered asset.")] = None,
) -> None:
    """Mint a signed token for one task attempt (--task) or one DAG run's callbacks (no --task)."""

    from assetbus.producers.tokens import DEFAULT_TTL_SECONDS, dag_token, task_token

    ttl = _ttl(ttl, DEFAULT_TTL_SECONDS)
    if try_number < 1 or map_index < -1:
        fail("--try must be >= 1 and --map-index >= -1")
    publish: Publication = [_parse_outlet(o) for o in outlets] if outlets else "*"
    s, key = settings(), signing_key()
    if task is None:
        token = dag_token(key, dag, run_id, ttl_seconds=ttl, publish=publish, not_after=not_after)
    else:
        token = task_token(key, dag, run_id, task, map_index=map_index, try_number=try_number,
                           ttl_seconds=ttl, publish=publish, not_after=not_after)
    _echo(token, output, {"ASSETBUS_TOKEN": token, "KAFKA_BOOTSTRAP_SERVERS": s.bootstrap_servers,
                          "ASSETBUS_TOPIC_PREFIX": s.topic_prefix})


@app.command("worker")
def worker(
    deployment: Annotated[str, typer.Option("--deployment", help="A name for the Airflow deployment (the "
                                            "credential's subject: `airflow-worker:NAME`).")] = "default",
    ttl: Annotated[int | None, typer.Option("--ttl", help="Lifetime in seconds (default 90 days); mint a new one "
                                            "and update the connection before it ends.")] = None,
    output: Annotated[Output, typer.Option("--format", help="token: the credential alone; json: credential, "
                                           "claims and expiry; env: an `export AIRFLOW_CONN_ASSETBUS_DEFAULT=...` "
                                           "line (needs --api-url).")] = "token",
    api_url: Annotated[str | None, typer.Option("--api-url", help="The assetbus API the workers ask for tokens "
                                                "(the connection's host, for --format env).")] = None,
) -> None:
    """Mint the Airflow worker credential: the password of the Airflow connection `assetbus_default`. It may ask
    `POST /airflow/tokens` for attempts Airflow vouches for and register Airflow DAGs' readiness rules; it cannot
    emit or touch state."""

    from assetbus.consumers.airflow.workers import (
        DEFAULT_WORKER_TTL_SECONDS,
        SCOPE_AIRFLOW_WORKER,
        worker_source,
        worker_subject,
    )
    from assetbus.producers.tokens import issue_token

    ttl = _ttl(ttl, DEFAULT_WORKER_TTL_SECONDS)
    if not deployment:
        fail("--deployment must not be empty")
    if output == "env" and not api_url:
        fail("--format env needs --api-url (the connection's host)")
    token = issue_token(signing_key(), worker_source(deployment), ttl_seconds=ttl, subject=worker_subject(deployment),
                        scope=SCOPE_AIRFLOW_WORKER, publish=[])
    connection = json.dumps({"conn_type": "assetbus", "host": api_url, "password": token})
    _echo(token, output, {"AIRFLOW_CONN_ASSETBUS_DEFAULT": connection})


@app.command("revoke")
def revoke_token(
    token: Annotated[str, typer.Argument(help="The token to withdraw (a worker credential, say).")],
    reason: Annotated[str, typer.Option("--reason", help="Why, kept with the revocation.")] = "",
) -> None:
    """Revoke one token by its `jti` (a worker credential, say): the Airflow minter refuses it from the next
    request on (401 `credential_revoked`), with no key rotation. The token must verify with this
    installation's keys."""
    from assetbus.cli.common import on_database
    from assetbus.consumers.auth import TokenError, TokenVerifier
    from assetbus.consumers.storage.revocations import revoke
    from assetbus.security_settings import SecurityConfigError

    try:
        keys = settings().verification_keys
        claims = TokenVerifier.configured(jwks=keys["token_jwks"], secret=keys["token_secret"]).claims(token)
    except (SecurityConfigError, TokenError) as error:
        fail(f"not a token of this installation: {error}")
    jti, subject = claims.get("jti"), str(claims.get("sub"))
    if not isinstance(jti, str) or not jti:
        fail("the token has no `jti`: it cannot be revoked by itself (rotate the signing key instead)")

    added = on_database(lambda conn: revoke(conn, jti, subject, reason), transaction=True)
    typer.echo(f"revoked {subject} (jti {jti})" if added else f"{subject} (jti {jti}) was already revoked")


@app.command("operator")
def operator(
    name: Annotated[str | None, typer.Option("--name", help="Who the token is for (its subject: "
                                             "operator:NAME); default: the current user.")] = None,
    ttl: Annotated[int | None, typer.Option("--ttl", help="Lifetime in seconds (default: 8 hours).")] = None,
) -> None:
    """Mint an operator token (scope `ui:read`) and print it: it signs in to the `/ui` page and reads
    `/ui/api/*`, and can neither emit nor touch state."""
    import getpass

    from assetbus.consumers.api.ui_auth import OPERATOR_TTL_SECONDS, operator_token

    ttl = _ttl(ttl, OPERATOR_TTL_SECONDS)
    typer.echo(operator_token(signing_key(), name or getpass.getuser(), ttl_seconds=ttl))


def _ttl(ttl: int | None, default: int) -> int:
    ttl = default if ttl is None else ttl
    if ttl <= 0:
        fail("--ttl must be a positive number of seconds")
    return ttl


@app.command("subscriber")
def subscriber(
    dag: Annotated[str, typer.Option("--dag", help="The consumer DAG whose runs the token may claim.")],
    name: Annotated[str, typer.Option("--name", help="Who the token is for (its subject: subscriber:NAME), "
                                      "e.g. the service's consumer group.")],
    ttl: Annotated[int | None, typer.Option("--ttl", help="Lifetime in seconds (default: 30 days).")] = None,
) -> None:
    """Mint a subscriber token (scope `runs:claim`, one DAG) and print it: a downstream service's
    `ApiLedger` claims, renews and finishes that DAG's runs with it, and can neither emit nor touch state."""
    from assetbus.consumers.api.routes.runs import SUBSCRIBER_TTL_SECONDS, subscriber_token

    ttl = _ttl(ttl, SUBSCRIBER_TTL_SECONDS)
    typer.echo(subscriber_token(signing_key(), dag, name, ttl_seconds=ttl))


@app.command("inspect")
def inspect(token: Annotated[str, typer.Argument(help="The token to read.")]) -> None:
    """Print a token's claims and whether this installation's keys verify it (exit code 1 if not)."""
    import jwt

    from assetbus.consumers.auth import TokenError, TokenVerifier
    from assetbus.security_settings import SecurityConfigError

    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError as error:
        fail(f"not a token: {error}")
    try:
        keys = settings().verification_keys
        verifier = TokenVerifier.configured(jwks=keys["token_jwks"], secret=keys["token_secret"])
        verifier.claims(token)  # signature, audience and expiry: every kind of token
        if token_kind(claims).startswith("emitter"):  # it names a task attempt or a DAG run: all of it is checked
            verifier.verify(token)
        verdict = "valid"
    except SecurityConfigError as error:
        fail(str(error))
    except TokenError as error:
        verdict = error.reason
    typer.echo(json.dumps({"claims": claims, "kind": token_kind(claims), "verified": verdict}, indent=2))
    if verdict != "valid":
        raise typer.Exit(1)


def token_kind(claims: dict[str, object]) -> str:
    """What a token is for, by its claims: an emitter's (task attempt, DAG run) or a scoped one's subject kind."""
    scope = str(claims.get("scope", ""))
    if "emit" in scope.split():
        return f"emitter ({claims.get('kind', 'task')})"
    subject = str(claims.get("sub", ""))
    return subject.split(":", 1)[0] if ":" in subject else f"scope {scope or '?'}"


@app.command("keygen")
def keygen(
    key_file: Annotated[Path, typer.Option("--key", help="Where to write the new private key (PEM, mode 0600): "
                                           "for the minters only.")],
    jwks_file: Annotated[Path, typer.Option("--jwks", help="JWKS file of the public keys, for the services. An "
                                            "existing one keeps its keys (rotation: old tokens keep verifying "
                                            "until you remove the old key).")],
    algorithm: Annotated[Literal["EdDSA", "RS256"], typer.Option("--alg", help="EdDSA (Ed25519) or RS256 (RSA "
                                                                 "2048).")] = "EdDSA",
) -> None:
    """Make a signing key pair: the private key for ASSETBUS_TOKEN_SIGNING_KEY, its public half added to the
    JWKS for ASSETBUS_TOKEN_JWKS."""
    from assetbus.producers.signing import SigningKey

    if key_file.exists():
        fail(f"{key_file} exists; choose a new file for a new key")
    key = SigningKey.generate(algorithm)
    keys: list[dict[str, object]] = []
    if jwks_file.exists():
        try:
            keys = list(json.loads(jwks_file.read_text())["keys"])
        except (ValueError, KeyError, TypeError) as error:
            fail(f"{jwks_file} is not a JWKS: {error}")
    key_file.parent.mkdir(parents=True, exist_ok=True)
    key_file.touch(mode=0o600)
    key_file.write_bytes(key.to_pem())
    jwks_file.write_text(json.dumps({"keys": [key.public_jwk(), *keys]}, indent=2) + "\n")
    typer.echo(json.dumps({"kid": key.kid, "alg": key.algorithm, "key": str(key_file), "jwks": str(jwks_file),
                           "keys_in_jwks": len(keys) + 1}, indent=2))
