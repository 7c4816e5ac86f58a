"""Render and run: what the Helm chart renders is run here as a cluster would run it, without a cluster.

The chart is rendered pointed at the local Kafka and PostgreSQL (a fresh, never migrated database and a
fresh topic prefix), with secrets by reference to a Secret this test holds: once with every service on and
the token keys mounted as files, once with the default services and the development token secret. The
migrate Job's command runs first; then every Deployment's container command runs as a local process with
exactly the environment its manifest gives it (Secret references resolved, mounted paths pointing at
folders holding the Secrets' files). Every liveness, readiness and start-up probe must answer on the port
the manifest declares, and an emission must flow end to end through those processes: HTTP emit on the API
→ Kafka → persister → receipt back to the API, and the stored event on to the scheduler.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from assetbus.schemas import Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics
from tests.conftest import fresh_database
from tests.helpers import wait_for
from tests.integration.deploy.chart import (
    LocalContainer,
    Secrets,
    base_environment,
    component,
    local_container,
    of_kind,
    render,
)

SECRET = "platform-assetbus"
ASSET = ("deploy.orders", "s3://bucket/deploy/orders/")


@pytest.fixture
async def empty_db_url(infra: Settings) -> AsyncIterator[str]:
    """A fresh database that was never migrated (the migrate Job's to migrate), dropped afterwards."""
    async for url in fresh_database(infra.database_url, None):
        yield url


@pytest.fixture
async def fresh_prefix(infra: Settings) -> AsyncIterator[Topics]:
    """A topic prefix with no topics yet (the migrate Job's to create), its topics deleted afterwards."""
    topics = Topics(prefix=f"t{uuid.uuid4().hex[:12]}")
    yield topics
    if not os.environ.get("ASSETBUS_KEEP_TEST_TOPICS"):
        await delete_topics(infra.kafka, list(topics.core()))


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _key_pair(folder: Path) -> tuple[str, str]:
    """(private key PEM, JWKS) made by `assetbus token keygen`, as an operator makes them."""
    key, jwks = folder / "signing-key.pem", folder / "jwks.json"
    subprocess.run([str(Path(sys.executable).with_name("assetbus")), "token", "keygen", "--key", str(key),
                    "--jwks", str(jwks)], check=True, capture_output=True, env=base_environment())
    return key.read_text(), jwks.read_text()


@contextlib.contextmanager
def running(containers: list[LocalContainer], logs: Path) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """Each container's command as a local process (in its own folder: no `.env` of the repository is read),
    stopped with SIGTERM (as a pod is) when the block ends."""
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for container in containers:
            workdir = logs / container.name
            workdir.mkdir(exist_ok=True)
            with (logs / f"{container.name}.log").open("wb") as log:
                processes[container.name] = subprocess.Popen(
                    container.argv, env={**base_environment(), **container.env}, cwd=workdir,
                    stdout=log, stderr=subprocess.STDOUT)
        yield processes
    finally:
        for process in processes.values():
            process.send_signal(signal.SIGTERM)
        for process in processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _tails(logs: Path) -> str:
    return "\n".join(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:])
                     for log in sorted(logs.glob("*.log")))


def chart_values(infra: Settings, topics: Topics, ports: list[int], airflow_port: int, *,
                 everything: bool) -> dict[str, Any]:
    """Every service on with the token keys as mounted files, or the defaults' three services with the
    development token secret from the Secret."""
    persister, scheduler, api, bridge, forwarder = ports
    values: dict[str, Any] = {
        "kafka": {"bootstrapServers": infra.bootstrap_servers},
        "topicPrefix": topics.prefix,
        "secret": {"existingSecret": SECRET},
        "logFormat": "kv",
        "persister": {"metricsPort": persister, "env": {"ASSETBUS_PERSISTER_BATCH_TIMEOUT_MS": "20"}},
        "scheduler": {"metricsPort": scheduler},
        "api": {"port": api, "env": {"ASSETBUS_API_PIPELINE_GAUGES_INTERVAL_S": "2"}},
    }
    if everything:
        values.update({
            "tokens": {"jwksSecret": "assetbus-jwks", "signingKeySecret": "assetbus-signing-key"},
            "airflow": {"url": f"http://127.0.0.1:{airflow_port}"},  # nothing listens there: Airflow is down
            "bridge": {"enabled": True, "metricsPort": bridge},
            "forwarder": {"enabled": True, "metricsPort": forwarder},
            "metrics": {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True}},
            "networkPolicy": {"enabled": True},
        })
    return values


def cluster_secrets(db_url: str, folder: Path, *, everything: bool) -> Secrets:
    """The Secrets the cluster would hold: the one the services read (by reference), and the key files."""
    if not everything:
        return Secrets({SECRET: {"DATABASE_URL": db_url, "ASSETBUS_TOKEN_SECRET": "chart-" + uuid.uuid4().hex}})
    private_key, jwks = _key_pair(folder)
    return Secrets({
        SECRET: {"DATABASE_URL": db_url, "ASSETBUS_AIRFLOW_TOKEN": "an-airflow-token"},
        "assetbus-jwks": {"jwks.json": jwks},
        "assetbus-signing-key": {"signing-key.pem": private_key},
    })


async def _answers(client: httpx.AsyncClient, url: str) -> bool:
    try:
        return (await client.get(url, timeout=5)).status_code == 200
    except httpx.HTTPError:
        return False


async def _metric(client: httpx.AsyncClient, port: int, sample: str) -> float:
    """The sum of one sample's lines (all its labels) in a service's /metrics (0 if it is not there yet)."""
    text = (await client.get(f"http://127.0.0.1:{port}/metrics", timeout=5)).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith((sample + " ", sample + "{")))


@pytest.mark.parametrize("everything", [True, False], ids=["every-service-key-files", "defaults-token-secret"])
async def test_what_the_chart_renders_runs_answers_its_probes_and_carries_an_emission(
        infra: Settings, empty_db_url: str, fresh_prefix: Topics, tmp_path: Path, everything: bool) -> None:
    ports = free_ports(6)
    objects = render(chart_values(infra, fresh_prefix, ports[:5], ports[5], everything=everything), tmp=tmp_path)
    secrets = cluster_secrets(empty_db_url, tmp_path, everything=everything)
    scratch, logs = tmp_path / "volumes", tmp_path / "logs"
    logs.mkdir()

    (job,) = of_kind(objects, "Job")
    migrate = local_container(job, secrets, scratch)
    migrated = await asyncio.to_thread(
        subprocess.run, migrate.argv, env={**base_environment(), **migrate.env}, cwd=tmp_path,
        capture_output=True, text=True, timeout=120, check=False)
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    assert "database: at head" in migrated.stdout or "database: migrated" in migrated.stdout, migrated.stdout

    services = {component(d): local_container(d, secrets, scratch) for d in of_kind(objects, "Deployment")}
    assert sorted(services) == (["api", "bridge", "forwarder", "persister", "scheduler"] if everything
                                else ["api", "persister", "scheduler"])
    with running(list(services.values()), logs) as processes:
        async with httpx.AsyncClient() as client:
            for name, container in services.items():
                assert set(container.probes) == {"liveness", "readiness", "startup"}, name
                for kind, (path, port) in container.probes.items():
                    url = f"http://127.0.0.1:{port}{path}"

                    async def answered(name: str = name, url: str = url) -> bool:
                        code = processes[name].poll()
                        assert code is None, f"{name} exited with {code}:\n{_tails(logs)}"
                        return await _answers(client, url)

                    try:
                        await wait_for(answered, timeout_s=60, interval=0.3, what=f"{name}'s {kind} probe {url}")
                    except (AssertionError, TimeoutError) as error:
                        raise AssertionError(f"{error}\n{_tails(logs)}") from error

            await _emit_end_to_end(client, services, tmp_path, logs)


async def _emit_end_to_end(client: httpx.AsyncClient, services: dict[str, LocalContainer], tmp_path: Path,
                           logs: Path) -> None:
    """An operator registers an asset in the API's pod; a task emits over HTTP with a token minted by the key
    the API holds; the persister stores it and its receipt comes back; the scheduler applies the event (and
    the forwarder, where it runs, takes it to the Airflow that is down)."""
    api = services["api"]
    operator = {**base_environment(), **api.env}
    cli = str(Path(sys.executable).with_name("assetbus"))
    registered = await asyncio.to_thread(subprocess.run, [cli, "assets", "register", *ASSET], env=operator,
                                         cwd=tmp_path, capture_output=True, text=True, check=False)
    assert registered.returncode == 0, registered.stdout + registered.stderr
    issued = await asyncio.to_thread(subprocess.run, [cli, "token", "issue", "--dag", "ingest", "--run", "r1",
                                                      "--task", "load"], env=operator, cwd=tmp_path,
                                     capture_output=True, text=True, check=False)
    assert issued.returncode == 0, issued.stderr
    token = issued.stdout.strip()
    body = {"asset": {"name": ASSET[0], "uri": ASSET[1]}, "partition_key": "2026-10-01", "dedupe_key": "batch-1"}
    url = f"http://127.0.0.1:{api.ports['http']}/execution/asset-events/emit"
    answer = await client.post(url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert answer.status_code == 200, f"{answer.status_code} {answer.text}\n{_tails(logs)}"
    receipt = answer.json()
    assert receipt["status"] == "accepted" and receipt["event_id"] is not None, json.dumps(receipt)
    again = await client.post(url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert again.json()["status"] == "duplicate" and again.json()["event_id"] == receipt["event_id"]

    persister_port = services["persister"].ports["metrics"]
    assert await _metric(client, persister_port, "assetbus_persister_accepted_total") == 1
    assert await _metric(client, persister_port, "assetbus_persister_duplicate_total") == 1
    scheduler_port = services["scheduler"].ports["metrics"]

    async def scheduled() -> bool:
        return await _metric(client, scheduler_port, "assetbus_scheduler_events_total") >= 1

    await wait_for(scheduled, timeout_s=30, interval=0.2, what="the scheduler to apply the stored event")
    if "forwarder" in services:  # it took the stored event too, and tries the Airflow that is down
        forwarder_port = services["forwarder"].ports["metrics"]

        async def forwarding() -> bool:
            return await _metric(client, forwarder_port, "assetbus_forwarder_airflow_errors_total") >= 1

        await wait_for(forwarding, timeout_s=30, interval=0.2, what="the forwarder to try Airflow with the event")
