"""`assetbus topics plan`: every topic and ACL of this installation, for a platform team to provision."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assetbus.cli.common import fail, on_database, settings

app = typer.Typer(help="Topics and ACLs, for platforms that provision them.", no_args_is_help=True)

FORMAT_HELP = ("json or yaml (the plan), strimzi (KafkaTopic and KafkaUser resources, kafka.strimzi.io/v1) or "
               "terraform (Terraform's JSON syntax for the Mongey/kafka provider: save it as *.tf.json).")
PRINCIPAL_HELP = ("A role's Kafka principal, ROLE=PRINCIPAL (repeat the option), e.g. "
                  "persister=User:CN=persister,O=acme; default User:<prefix>-<role> (User:CN=<prefix>-<role> with "
                  "--user-auth tls). Roles: sdk, persister, scheduler, bridge, forwarder, api, cli, triggerer, "
                  "subscriber.")
USER_AUTH_HELP = ("How the principals authenticate: scram-sha-512, tls (client certificates) or none (OAuth: "
                  "Strimzi users without an authentication block, whose ACLs the User Operator manages).")


@app.command("plan")
def plan(
    fmt: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "json",
    dag: Annotated[list[str] | None, typer.Option("--dag", help="A consumer DAG whose readiness topic to list "
                                                  "(repeat the option).")] = None,
    synced: Annotated[bool, typer.Option("--synced", help="Also list the readiness topics of every active consumer "
                                         "DAG in the database (DATABASE_URL).")] = False,
    replication_factor: Annotated[int | None, typer.Option(
        help="Replicas of every topic (default: ASSETBUS_TOPIC_REPLICATION_FACTOR, else 3).", min=1)] = None,
    strimzi_cluster: Annotated[str, typer.Option(help="The strimzi.io/cluster label of the resources.")]
    = "my-cluster",
    principal: Annotated[list[str] | None, typer.Option("--principal", help=PRINCIPAL_HELP)] = None,
    user_auth: Annotated[str, typer.Option("--user-auth", help=USER_AUTH_HELP)] = "scram-sha-512",
    subscriber_groups: Annotated[str | None, typer.Option(
        "--subscriber-groups", help="What the group ids of readiness subscribers start with (their Read ACL is "
        "prefixed on it; default <prefix>-subscriber.).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout.")]
    = None,
) -> None:
    """Print every topic (partitions, replication, min ISR, retention, configs) and the ACLs each principal needs
    (ASSETBUS_TOPIC_PREFIX, ASSETBUS_TOPIC_*, ASSETBUS_CREATE_TOPICS and ASSETBUS_SCHEDULER_READINESS_PARTITIONS
    apply). Nothing connects to Kafka."""
    from pydantic import ValidationError

    from assetbus.cli.failures import ExitCode
    from assetbus.consumers.scheduler.config import ReadinessPartitions
    from assetbus.consumers.storage.dags import list_dags
    from assetbus.plan import FORMATS, USER_AUTHS, build_plan, parse_principals, render
    from assetbus.schemas import Topics

    if fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    auth = next((known for known in USER_AUTHS if known == user_auth), None)
    if auth is None:
        fail(f"--user-auth must be one of {', '.join(USER_AUTHS)}, not {user_auth!r}")
    s = settings()
    wanted = s.topic_settings
    try:
        readiness_partitions = ReadinessPartitions().readiness_partitions
    except ValidationError as error:
        fail(f"invalid setting ASSETBUS_SCHEDULER_READINESS_PARTITIONS: {error.errors()[0]['msg']}",
             code=ExitCode.USAGE)
    dag_ids = list(dag or ())
    if synced:
        dag_ids += [row.dag_id for row in on_database(lambda conn: list_dags(conn, active_only=True))]
    try:
        built = build_plan(Topics(prefix=s.topic_prefix), dag_ids,
                           replication_factor=replication_factor or wanted.replication_factor or 3,
                           min_insync_replicas=wanted.min_insync_replicas, partitions=wanted.partitions,
                           readiness_partitions=readiness_partitions,
                           create_topics=s.create_topics, principals=parse_principals(principal or ()),
                           user_auth=auth, subscriber_groups_prefix=subscriber_groups)
        text = render(built, fmt, strimzi_cluster=strimzi_cluster)
    except ValueError as error:
        fail(str(error))
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
