"""`assetbus airflow sync`: register Airflow's assets and their tasks (outlets, inlets) in assetbus."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from assetbus.cli.common import connect, console, err_console, fail, run, settings
from assetbus.cli.output import print_rows

if TYPE_CHECKING:  # imported where used, so that `assetbus --help` stays fast
    from assetbus.consumers.airflow import AirflowAccount, AirflowSyncReport
    from assetbus.consumers.airflow.declared import DeclaredReport

app = typer.Typer(help="The Airflow 3 integration: keep assets and task registrations in step.",
                  no_args_is_help=True)


CREDENTIALS = ("ASSETBUS_AIRFLOW_PASSWORD", "ASSETBUS_AIRFLOW_TOKEN", "ASSETBUS_AIRFLOW_AUTH")
"""The ways to authenticate to Airflow's REST API: exactly one must be set."""


def airflow_account(url: str | None = None, username: str | None = None) -> AirflowAccount:
    """The account from ASSETBUS_AIRFLOW_* (options win): one line naming the setting if it is incomplete,
    if it sets more than one way to authenticate, or if ASSETBUS_AIRFLOW_AUTH cannot be loaded."""
    from assetbus.consumers.airflow import AirflowAccount
    from assetbus.consumers.airflow.account import load_auth
    from assetbus.settings import AirflowSettings

    s = AirflowSettings()
    url = url or s.url
    if not url:
        fail("no Airflow URL: set ASSETBUS_AIRFLOW_URL (Airflow's API server, e.g. http://localhost:8080)")
    password = s.password.get_secret_value() if s.password is not None else ""
    token = s.token.get_secret_value().strip() if s.token is not None else ""
    auth = (s.auth or "").strip()
    given = [name for name, value in zip(CREDENTIALS, (password, token, auth), strict=True) if value]
    if not given:
        fail("no Airflow credentials: set one of ASSETBUS_AIRFLOW_PASSWORD (the service account's password, "
             "with ASSETBUS_AIRFLOW_USERNAME), ASSETBUS_AIRFLOW_TOKEN (a bearer token) or ASSETBUS_AIRFLOW_AUTH "
             "(package.module:Factory, an httpx.Auth)")
    if len(given) > 1:
        fail(f"conflicting Airflow credentials: {' and '.join(given)} are both set; set exactly one of "
             f"{', '.join(CREDENTIALS)}")
    if auth:
        try:
            load_auth(auth)
        except ValueError as error:
            fail(f"ASSETBUS_AIRFLOW_AUTH={auth!r}: {error}")
    return AirflowAccount(url=url, username=username or s.username, password=password, token=token, auth=auth,
                          timeout_s=s.timeout_s)


@app.command("metadata-db")
def metadata_db(
    name: str | None = typer.Argument(None, help="The database (default: assetbus's database name + `_airflow`)."),
) -> None:
    """Create a database for Airflow's metadata on assetbus's PostgreSQL server (unless it exists) and print
    its URL for Airflow (`AIRFLOW__DATABASE__SQL_ALCHEMY_CONN`, psycopg2: `pip install apache-airflow[postgres]`)."""
    from assetbus.infra.databases import airflow_metadata_url, default_database_name, ensure_database
    from assetbus.infra.errors import InfraError

    server = settings().database_url
    database = name or default_database_name(server)
    created = run(ensure_database(server, database), refused=(InfraError,))
    err_console.print(f"{'created' if created else 'already there, kept as it is:'} database {database}",
                      highlight=False)
    print(airflow_metadata_url(server, database).render_as_string(hide_password=False))


@app.command("sync")
def sync(
    airflow_url: str | None = typer.Option(None, "--airflow-url", help="Airflow's API server (default "
                                           "ASSETBUS_AIRFLOW_URL)."),
    username: str | None = typer.Option(None, "--username", help="Service account (default "
                                        "ASSETBUS_AIRFLOW_USERNAME); its password is ASSETBUS_AIRFLOW_PASSWORD (or set "
                                        "ASSETBUS_AIRFLOW_TOKEN or ASSETBUS_AIRFLOW_AUTH instead)."),
    dag: Annotated[list[str] | None, typer.Option("--dag", help="Only the assets of these DAGs (repeatable).")] = None,
    metadata_url: str | None = typer.Option(None, "--metadata-url", envvar="ASSETBUS_AIRFLOW_METADATA_URL",
                                            help="Airflow's metadata database (read-only), optional: read the "
                                            "readiness rules of the DAGs Airflow tags `assetbus` from their "
                                            "serialized timetables rather than from what the provider's cluster "
                                            "policy registered."),
    watch: float = typer.Option(0.0, "--watch", help="Sync again every this many seconds, until interrupted."),
) -> None:
    """Register every asset Airflow knows, attach the tasks that declare it, and activate the readiness rules of
    the DAGs tagged `assetbus` (idempotent; Airflow's REST API is all it needs)."""
    import time
    from functools import partial

    from assetbus.consumers.airflow import AirflowClient, AirflowError
    from assetbus.consumers.airflow.declared import sync_from_airflow

    async def once() -> tuple[AirflowSyncReport, DeclaredReport]:
        async with AirflowClient(account) as airflow:
            return await sync_from_airflow(airflow, partial(connect, transaction=True), dag_ids=dag or None,
                                           metadata_url=metadata_url)

    account = airflow_account(airflow_url, username)
    while True:
        try:
            report, rules = run(once())
        except AirflowError as error:
            if not watch:
                fail(str(error))
            console.print(f"[yellow]{escape(str(error))}[/]")
        else:
            _print_sync(account, report, rules)
            without = [dag_id for dag_id in rules.without_rule if not dag or dag_id in dag]  # --dag: only theirs
            if not watch and not (report.ok and not without):
                raise typer.Exit(1)
        if not watch:
            return
        time.sleep(watch)


def _print_sync(account: AirflowAccount, report: AirflowSyncReport, rules: DeclaredReport) -> None:
    attached: dict[str, list[str]] = {}
    for dag_id, task_id, asset, role in report.attached:
        attached.setdefault(asset, []).append(f"{dag_id}.{task_id} ({role})")
    assets = [*((name, "[green]registered[/]", ", ".join(attached.get(name, [])) or "-") for name in report.registered),
              *((name, "[dim]known[/]", ", ".join(attached.get(name, [])) or "-") for name in report.unchanged),
              *((name, "[red]not synced[/]", reason) for name, reason in report.errors.items())]
    print_rows(assets, False, ("asset", "result", "tasks attached"),
               lambda row: (escape(row[0]), row[1], escape(row[2])), title=f"airflow sync from {account.url}")
    dags = [*((dag_id, change.value) for dag_id, change in sorted(rules.changes.items())),
            *((dag_id, f"[red]none[/]: {escape(reason)}") for dag_id, reason in sorted(rules.without_rule.items())),
            *((dag_id, "[dim]deactivated[/]") for dag_id in rules.deactivated)]
    print_rows(dags, False, ("Airflow DAG", "readiness rule"), lambda row: (escape(row[0]), row[1]),
               title="DAGs tagged assetbus")
