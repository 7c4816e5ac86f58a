"""`assetbus doctor`: checks the broker, the database, migrations, topics and their settings, versions
and clock skew, and says what to fix. Exit code 1 when a check fails (warnings alone exit 0)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

import typer

from assetbus.cli.common import JSON_OPTION, connect, console, kafka_connection, run, settings
from assetbus.cli.output import print_json, print_rows

if TYPE_CHECKING:
    from assetbus.consumers.storage.engine import DatabaseStatus

STALE_INTENT_S = 300.0
"""An Airflow forwarder intent open longer than this is a warning (the forwarder is stopped or blocked)."""
DOUBLE_SERVED_S = 24 * 3600
"""How far back `doctor` looks for events forwarded for an asset that a bridge-served DAG waits on."""

MAX_SKEW_S = 2.0
"""More than this between this machine's clock and the database's is a warning: event times are the
database's, partition dates and token expiries the emitters'."""


@dataclass(frozen=True)
class Check:
    name: str
    status: Literal["ok", "warn", "fail"]
    detail: str
    fix: str = ""


def _versions() -> list[Check]:
    import platform

    from assetbus.cli.versions import installed_versions
    from assetbus.schemas import SCHEMA_VERSION

    found = installed_versions()
    missing = [name for name, v in found.items() if v is None]
    distinct = {v for v in found.values() if v is not None}
    detail = ", ".join(f"{n} {v or '-'}" for n, v in found.items()) + f"; Python {platform.python_version()}; " \
        f"wire schema {SCHEMA_VERSION}"
    if missing:
        return [Check("versions", "fail", detail, f"install {', '.join(missing)} (same version as the others)")]
    if len(distinct) > 1:
        return [Check("versions", "warn", detail, "install one release of all three distributions")]
    return [Check("versions", "ok", detail)]


async def _database() -> tuple[list[Check], list[str]]:
    from alembic.script import ScriptDirectory

    from assetbus.consumers.storage.engine import database_status
    from assetbus.migrate import alembic_config

    s = settings()
    try:
        started = time.time()
        async with connect() as conn:
            status = await database_status(conn)
        ended = time.time()
    except Exception as error:
        return [Check("database", "fail", f"{type(error).__name__}: {error}",
                      "run `assetbus infra up`, or check DATABASE_URL")], []
    checks = [Check("database", "ok", f"PostgreSQL {status.server_version}")]
    heads = sorted(ScriptDirectory.from_config(alembic_config(s.database_url)).get_heads())
    if status.revisions == heads:
        checks.append(Check("migrations", "ok", f"at head {', '.join(heads)}"))
    else:
        checks.append(Check("migrations", "fail", f"database at {', '.join(status.revisions) or 'nothing'}, "
                            f"code at head {', '.join(heads)}", "run `assetbus migrate`"))
    skew = status.now.timestamp() - (started + ended) / 2
    detail = f"database clock {skew:+.3f} s from this machine's (round trip {ended - started:.3f} s)"
    checks.append(Check("clock skew", "ok" if abs(skew) <= MAX_SKEW_S + (ended - started) else "warn", detail,
                        "" if abs(skew) <= MAX_SKEW_S else "synchronize the clocks (NTP) of this machine and the "
                        "database server"))
    return [*checks, *_synchronous_standby(status), *await _forwarder()], status.active_dags


def _synchronous_standby(status: DatabaseStatus) -> list[Check]:
    """With `synchronous_standby_names` set, every commit waits for a standby it names: none connected in
    sync (or quorum) state means the persister's commits, and so the receipts, stall."""
    if not status.synchronous_standby_names:
        return []
    waiting_for = f"synchronous_standby_names = {status.synchronous_standby_names!r}"
    if synchronous := status.synchronous_standbys():
        connected = ", ".join(f"{name} ({state}, {sync})" for name, state, sync in synchronous)
        return [Check("synchronous standby", "ok", f"{waiting_for}; connected: {connected}")]
    if any(state is None for _, state, _ in status.standbys):
        return [Check("synchronous standby", "warn", f"{waiting_for}; {len(status.standbys)} standby(s) connected, "
                      "their state unreadable by this role", "GRANT pg_monitor TO the DATABASE_URL role")]
    return [Check("synchronous standby", "fail", f"{waiting_for}: commits wait for a synchronous standby that is "
                  "not connected: receipts stall", "start the standby, or remove it from synchronous_standby_names "
                  "(ALTER SYSTEM, then SELECT pg_reload_conf())")]


async def _forwarder() -> list[Check]:
    """The Airflow forwarder's ledger: what it posted, intents left open for long, and events it posted for an
    asset that a DAG served by the bridge waits on (that DAG then ran twice in Airflow)."""
    from assetbus.consumers.airflow.declared import bridge_served_assets
    from assetbus.consumers.storage.forwarded import forwarder_status, posted_by_asset

    try:
        async with connect() as conn:
            status = await forwarder_status(conn)
            posted = await posted_by_asset(conn, datetime.now(UTC) - timedelta(seconds=DOUBLE_SERVED_S))
            served = await bridge_served_assets(conn)
    except Exception as error:  # a database behind the migrations: reported by the migrations check
        return [Check("airflow forwarder", "warn", f"ledger unreadable: {type(error).__name__}",
                      "run `assetbus migrate`")]
    if not (status.posted or status.refused or status.open_intents):
        return [Check("airflow forwarder", "ok", "nothing forwarded to Airflow (`assetbus run airflow-forwarder` "
                      "posts stored events as Airflow asset events)")]
    detail = (f"{status.posted} event(s) posted to Airflow, last at {status.last_posted or '-'}; "
              f"{status.refused} refused; {status.open_intents} open intent(s)")
    if twice := sorted(asset for asset in posted if asset in served):
        dags = sorted({dag for asset in twice for dag in served[asset]})
        return [Check("airflow forwarder", "fail", f"events of {', '.join(twice)} were posted to Airflow in the last "
                      f"{DOUBLE_SERVED_S // 3600} h, and the bridge serves {', '.join(dags)}, which wait on them: "
                      "Airflow started those DAGs twice (the bridge's run and an asset-triggered one)",
                      "run a forwarder that leaves those assets to the bridge (this release does), or limit it "
                      "with --asset; then check those DAGs' runs in Airflow")]
    stale = status.oldest_intent is not None and \
        (datetime.now(UTC) - status.oldest_intent).total_seconds() > STALE_INTENT_S
    if status.refused or stale:
        return [Check("airflow forwarder", "warn", detail, "read `detail` in airflow_forwarded: refused events "
                      "are not in Airflow; an old open intent means the forwarder cannot reach Airflow")]
    return [Check("airflow forwarder", "ok", detail)]


async def _kafka(dags: list[str]) -> list[Check]:
    from assetbus.consumers.observe import describe_cluster
    from assetbus.schemas import Topics
    from assetbus.topics import RETENTION_MS

    s = settings()
    topics = Topics(prefix=s.topic_prefix)
    wanted = {**topics.core(), **{topics.readiness(d): None for d in dags}}
    connection = kafka_connection()
    try:
        cluster = await describe_cluster(connection, list(wanted))
    except Exception as error:
        return [Check("broker", "fail", f"{connection.describe()}: {type(error).__name__}: {error}",
                      "run `assetbus infra up`, or check KAFKA_BOOTSTRAP_SERVERS")]
    checks = [Check("broker", "ok", f"{connection.describe()}: cluster {cluster.cluster_id}, "
                    f"{len(cluster.brokers)} broker(s)")]
    missing = [name for name, info in cluster.topics.items() if info.partitions is None]
    if missing:
        fix = "run `assetbus migrate`" + (" and `assetbus dags sync PATH`" if any(".readiness." in m for m in missing)
                                          else "")
        checks.append(Check("topics", "fail", f"missing: {', '.join(missing)}", fix))
    else:
        checks.append(Check("topics", "ok", f"{len(wanted)} present under prefix {topics.prefix!r}"))
    for name, expected in wanted.items():
        info = cluster.topics[name]
        if info.partitions is not None and expected is not None and info.partitions < expected:
            checks.append(Check(f"topic {name}", "warn", f"{info.partitions} partition(s), {expected} expected",
                                "fewer partitions limit how many persisters share the work; add partitions "
                                "(kafka-topics.sh --alter) before the topic holds keyed data"))
    receipts = cluster.topics[topics.receipts]
    retention = receipts.configs.get("retention.ms")
    if receipts.partitions is not None and retention != str(RETENTION_MS["receipts"]):
        checks.append(Check(f"topic {topics.receipts}", "warn", f"retention.ms={retention}, "
                            f"{RETENTION_MS['receipts']} expected (receipts only matter while an emitter waits)",
                            f"kafka-configs.sh --alter --topic {topics.receipts} --add-config "
                            f"retention.ms={RETENTION_MS['receipts']}"))
    return checks


async def _airflow_rules(dags: list[str]) -> list[Check]:
    """With ASSETBUS_AIRFLOW_URL set: the Airflow DAGs tagged `assetbus` that have no readiness rule."""
    from assetbus.cli.airflow import airflow_account
    from assetbus.consumers.airflow import AirflowClient
    from assetbus.consumers.airflow.declared import AIRFLOW_TAG

    try:
        async with AirflowClient(airflow_account()) as airflow:
            tagged = [d["dag_id"] for d in await airflow.pages("/dags", "dags", params={"tags": [AIRFLOW_TAG]})
                      if not d.get("is_stale")]
    except Exception as error:
        return [Check("airflow DAG rules", "warn", f"cannot list Airflow's DAGs: {type(error).__name__}: {error}",
                      "check ASSETBUS_AIRFLOW_URL and the Airflow credentials")]
    without = sorted(set(tagged) - set(dags))
    if without:
        return [Check("airflow DAG rules", "warn", f"tagged {AIRFLOW_TAG!r} in Airflow but without a readiness "
                      f"rule: {', '.join(without)}", "the bridge's log says why, one line per DAG: "
                      "`Airflow DAG <dag_id> is tagged assetbus but has no readiness rule: <why>`; a rule the "
                      "dag-processor could not register is named in its log of the DAG's file: `cannot register "
                      "the readiness rule of Airflow DAG <dag_id> with the assetbus API ...`")]
    return [Check("airflow DAG rules", "ok", f"{len(tagged)} DAG(s) tagged {AIRFLOW_TAG!r}, each with a rule")]


ENV_MINTER_IDENTITY = "ASSETBUS_API_AIRFLOW_IDENTITY"


def _airflow_identity() -> list[Check]:
    """With ASSETBUS_AIRFLOW_URL set: the identity mode the Airflow minter runs in and why, and whether the API
    at ASSETBUS_API_URL verifies what this machine's signing key signs (the key `AssetbusStoreBackend` needs)."""
    import os

    from assetbus.producers.airflow.identity_checks import key_findings
    from assetbus.security_settings import SecurityConfigError
    from assetbus.settings import ApiSettings

    mode = os.environ.get(ENV_MINTER_IDENTITY, "").strip() or "attested"
    why = f"{ENV_MINTER_IDENTITY}={mode}" if os.environ.get(ENV_MINTER_IDENTITY) else "the default"
    if mode not in ("attested", "credential"):
        return [Check("airflow identity", "fail", f"{ENV_MINTER_IDENTITY}={mode!r}",
                      "set it to attested (the default) or credential")]
    checks = [Check("airflow identity", "ok", f"{mode} ({why}): " + (
        "task tokens only from attestations of AssetbusStoreBackend in Airflow's api-server; the worker "
        "credential gets DAG-run tokens" if mode == "attested" else
        "task tokens for the worker credential after Airflow's attempt check"))]
    try:
        key = settings().signing_key
    except SecurityConfigError:
        return [*checks, Check("airflow identity: signing key", "warn", "no signing key here to check against the "
                               "API", "run the doctor with the api-server's ASSETBUS_TOKEN_SIGNING_KEY")]
    for finding in key_findings(key, ApiSettings().url):
        checks.append(Check(f"airflow identity: {finding.name}", "ok" if finding.ok else "fail", finding.detail,
                            finding.fix))
    return checks


def _verdict(checks: list[Check]) -> str:
    """The closing line: what failed, else what to look at, else that everything passed."""
    failed = sum(c.status == "fail" for c in checks)
    warned = sum(c.status == "warn" for c in checks)
    if failed:
        return f"[bold red]{failed} check(s) failed[/]" + (f", {warned} warning(s)" if warned else "")
    if warned:
        return f"[yellow]no check failed; {warned} warning(s) to look at[/]"
    return "[green]all checks passed[/]"


def doctor(as_json: bool = JSON_OPTION) -> None:
    """Check broker, database, migrations, topics and their settings, versions and clock skew; say what to fix."""
    from rich.markup import escape

    from assetbus.settings import AirflowSettings

    async def go() -> list[Check]:
        database, dags = await _database()
        checks = [*_versions(), *database, *await _kafka(dags)]
        if AirflowSettings().url:
            checks += [*await _airflow_rules(dags), *_airflow_identity()]
        return checks

    checks = run(go())
    failed = [c for c in checks if c.status == "fail"]
    if as_json:
        print_json({"ok": not failed, "checked_at": datetime.now(UTC), "checks": checks})
    else:
        style = {"ok": "green", "warn": "yellow", "fail": "bold red"}
        print_rows(checks, False, ("check", "status", "detail", "what to do"),
                   lambda c: (c.name, f"[{style[c.status]}]{c.status}[/]", escape(c.detail), escape(c.fix or "-")),
                   title="assetbus doctor")
        console.print(_verdict(checks))
    if failed:
        raise typer.Exit(1)
