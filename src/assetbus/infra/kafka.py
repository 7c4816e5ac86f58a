"""The local Apache Kafka broker: one KRaft broker+controller run from Maven Central jars."""

from __future__ import annotations

import base64
import importlib.resources
import json
import re
import shutil
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from assetbus.infra.errors import InfraError
from assetbus.infra.state import (
    KafkaRecord,
    NodeRecord,
    Progress,
    ServiceStatus,
    brokers_seen,
    find_pids,
    parse_bootstrap,
    pid_alive,
    stop_pids,
    tcp_open,
    wait_until,
)
from assetbus.settings import InfraSettings

HOST = "127.0.0.1"
MAIN_CLASS = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
COMPLETE_MARKER = ".assetbus-complete"
START_TIMEOUT = 60.0


@dataclass(frozen=True)
class KafkaPaths:
    """Where the jars, config, data and logs of the local broker live."""

    version: str
    dist: Path  # <home>/kafka-<version>: pom.xml and libs/
    libs: Path
    config_dir: Path  # <home>/kafka: config files and data/
    server_properties: Path
    log4j_config: Path
    format_info: Path
    data: Path
    logs: Path
    log_file: Path
    console_log: Path

    @classmethod
    def of(cls, infra: InfraSettings) -> KafkaPaths:
        home = infra.home.expanduser().resolve()
        dist, conf, logs = home / f"kafka-{infra.kafka_version}", home / "kafka", home / "logs"
        return cls(infra.kafka_version, dist, dist / "libs", conf, conf / "server.properties",
                   conf / "log4j2.properties", conf / "format.json", conf / "data", logs, logs / "kafka.log",
                   logs / "kafka-console.log")


def render_properties(node_id: int, voters: str, listeners: dict[str, int], data_dir: Path, replicas: int = 1,
                      min_isr: int = 1, extra: Mapping[str, str] | None = None) -> str:
    """server.properties of a combined KRaft broker+controller on 127.0.0.1: `listeners` maps each listener
    (CONTROLLER included, the only one not advertised) to its port; `voters` is the controllers' host:port list."""
    advertised = [f"{name}://{HOST}:{port}" for name, port in listeners.items() if name != "CONTROLLER"]
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.bootstrap.servers": voters,
        "listeners": ",".join(f"{name}://{HOST}:{port}" for name, port in listeners.items()),
        "advertised.listeners": ",".join(advertised),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": ",".join(f"{name}:{'PLAINTEXT' if name == 'CONTROLLER' else name}"
                                                   for name in listeners),
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "offsets.topic.replication.factor": str(replicas),
        "transaction.state.log.replication.factor": str(replicas),
        "transaction.state.log.min.isr": str(min_isr),
        "share.coordinator.state.topic.replication.factor": str(replicas),
        "share.coordinator.state.topic.min.isr": str(min_isr),
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
        **(extra or {}),
    }
    lines = ["# Written by `assetbus infra up`; edits are overwritten."]
    return "\n".join([*lines, *(f"{key}={value}" for key, value in props.items())]) + "\n"


def render_server_properties(infra: InfraSettings, data_dir: Path) -> str:
    ports = {"PLAINTEXT": infra.kafka_port, "CONTROLLER": infra.kafka_controller_port}
    return render_properties(1, f"{HOST}:{infra.kafka_controller_port}", ports, data_dir)


def render_log4j2(log_file: Path) -> str:
    """log4j2 properties: INFO to a size-rolled file, nothing on the console."""
    return f"""# Written by `assetbus infra up`; edits are overwritten.
status = warn
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = {log_file}
appender.file.filePattern = {log_file}.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 50MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafkaRequest.name = kafka.request.logger
logger.kafkaRequest.level = WARN
"""


def start_command(infra: InfraSettings, java: str, log4j_config: Path, server_properties: Path) -> list[str]:
    """The java command line of a broker: the single one, or a node of a cluster."""
    jvm = [f"-Xmx{infra.kafka_heap}", "-Xms256m", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
           *infra.kafka_jvm_options.split()]
    classpath = [f"-Dlog4j2.configurationFile={log4j_config}", "-cp", f"{KafkaPaths.of(infra).libs}/*"]
    return [java, *jvm, *classpath, MAIN_CLASS, str(server_properties)]


def launch(infra: InfraSettings, java: str, log4j_config: Path, server_properties: Path,
           console_log: Path) -> subprocess.Popen[bytes]:
    """Launch a broker detached, in its config's folder, its output appended to `console_log`; does not wait."""
    with console_log.open("ab") as out:
        return subprocess.Popen(start_command(infra, java, log4j_config, server_properties), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, cwd=server_properties.parent,
                                start_new_session=True)


def random_cluster_id() -> str:
    """A Kafka cluster id (what `StorageTool random-uuid` prints), without starting a JVM."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def libs_complete(libs: Path) -> bool:
    """True when a previous fetch finished: the marker exists and lists jars that all exist."""
    try:
        names = (libs / COMPLETE_MARKER).read_text().split()
    except OSError:
        return False
    return bool(names) and all((libs / name).is_file() for name in names)


def fetch_jars(paths: KafkaPaths, progress: Progress) -> None:
    """Copy kafka_2.13 and its runtime dependencies from Maven Central (mvn) into libs/."""
    if libs_complete(paths.libs):
        return
    mvn = shutil.which("mvn")
    if mvn is None:
        raise InfraError("Maven (mvn) is not installed; install it (apt-get install -y maven).")
    progress(f"Fetching Apache Kafka {paths.version} jars from Maven Central (mvn)…")
    paths.dist.mkdir(parents=True, exist_ok=True)
    paths.logs.mkdir(parents=True, exist_ok=True)
    pom = paths.dist / "pom.xml"
    pom.write_bytes(importlib.resources.files("assetbus.infra").joinpath("resources/pom.xml").read_bytes())
    staging = paths.dist / "libs.partial"
    shutil.rmtree(staging, ignore_errors=True)
    log = paths.logs / "kafka-fetch.log"
    command = [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies", "-DincludeScope=runtime"]
    command += [f"-DoutputDirectory={staging}", f"-Dkafka.version={paths.version}"]
    with log.open("wb") as out:
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, cwd=paths.dist, check=False)
    jars = sorted(p.name for p in staging.glob("*.jar")) if staging.is_dir() else []
    if result.returncode != 0 or not any(name.startswith("kafka_2.13-") for name in jars):
        raise InfraError(f"Could not fetch Kafka {paths.version} with mvn; see {log} (Maven Central reachable?).")
    shutil.rmtree(paths.libs, ignore_errors=True)
    staging.rename(paths.libs)
    (paths.libs / COMPLETE_MARKER).write_text("\n".join(jars) + "\n")


def java_binary() -> str:
    """Path of a Java 17+ `java`, or InfraError."""
    java = shutil.which("java")
    if java is None:
        raise InfraError("Java is not installed; install Java 17 (apt-get install -y openjdk-17-jre-headless).")
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    match = re.search(r'version "(\d+)', out)
    if match is None or int(match.group(1)) < 17:
        raise InfraError(f"Kafka needs Java 17 or newer but `{java}` is older; install Java 17.")
    return java


def format_storage(infra: InfraSettings, paths: KafkaPaths, java: str, progress: Progress) -> None:
    """Format the KRaft storage once (again only if the controller port changed)."""
    try:
        info = json.loads(paths.format_info.read_text())
    except (OSError, ValueError):
        info = {}
    formatted = (paths.data / "meta.properties").is_file()
    if formatted and info.get("controller_port") == infra.kafka_controller_port:
        return
    if formatted:
        progress("Controller port changed: re-formatting the broker's storage (its topics are dropped)…")
    else:
        progress("Formatting the local broker's KRaft storage…")
    shutil.rmtree(paths.data, ignore_errors=True)
    cluster_id = random_cluster_id()
    log = paths.logs / "kafka-format.log"
    command = [java, f"-Dlog4j2.configurationFile={paths.log4j_config}", "-cp", f"{paths.libs}/*", STORAGE_TOOL,
               "format", "--standalone", "-t", cluster_id, "-c", str(paths.server_properties)]
    with log.open("wb") as out:
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
    if result.returncode != 0:
        shutil.rmtree(paths.data, ignore_errors=True)
        raise InfraError(f"Formatting the Kafka storage failed; see {log}.")
    info = {"cluster_id": cluster_id, "controller_port": infra.kafka_controller_port}
    paths.format_info.write_text(json.dumps(info) + "\n")


def find_broker(server_properties: Path, record: KafkaRecord | NodeRecord | None) -> int | None:
    """Pid of the broker (or cluster node) this launcher started (from the state, else found by its config path)."""
    command = (MAIN_CLASS, str(server_properties))
    if record is not None and pid_alive(record.pid, command):
        return record.pid
    pids = find_pids(*command)
    return pids[0] if pids else None


def start(infra: InfraSettings, paths: KafkaPaths, progress: Progress) -> subprocess.Popen[bytes]:
    """Fetch, configure, format and launch the broker detached; does not wait for it."""
    java = java_binary()
    ports = {"ASSETBUS_KAFKA_PORT": infra.kafka_port, "ASSETBUS_KAFKA_CONTROLLER_PORT": infra.kafka_controller_port}
    for env, port in ports.items():
        if tcp_open(HOST, port):
            raise InfraError(f"Port {port} is in use by another process; set {env} or stop that process.")
    fetch_jars(paths, progress)
    paths.config_dir.mkdir(parents=True, exist_ok=True)
    paths.logs.mkdir(parents=True, exist_ok=True)
    paths.server_properties.write_text(render_server_properties(infra, paths.data))
    paths.log4j_config.write_text(render_log4j2(paths.log_file))
    format_storage(infra, paths, java, progress)
    progress(f"Starting Kafka {paths.version} on {HOST}:{infra.kafka_port}…")
    return launch(infra, java, paths.log4j_config, paths.server_properties, paths.console_log)


def wait_ready(infra: InfraSettings, paths: KafkaPaths, pid: int, progress: Progress) -> None:
    """Poll until the broker answers a Metadata request, or InfraError after START_TIMEOUT."""
    progress(f"Waiting for the Kafka broker on {HOST}:{infra.kafka_port}…")
    alive = (MAIN_CLASS, str(paths.server_properties))
    exited: list[bool] = []

    def ready() -> bool:
        if not pid_alive(pid, alive):
            exited.append(True)
            return True
        return brokers_seen(HOST, infra.kafka_port, timeout=1.0) > 0

    if not wait_until(ready, START_TIMEOUT, interval=0.3) or exited:
        if not exited:
            stop_pids([pid])
        why = "exited during startup" if exited else f"did not answer within {START_TIMEOUT:.0f} s"
        raise InfraError(f"The Kafka broker {why}; see {paths.log_file} and {paths.console_log}.")


def status(name: str, port: int, server_properties: Path, record: KafkaRecord | NodeRecord | None, log_file: Path,
           expected: int = 1, listener: str = "") -> ServiceStatus:
    """The broker as `status` sees it: the single one (`expected` 1: its port is checked for another process too)
    or a node of a cluster of `expected` brokers (`listener`: its SASL_SSL listener, if it has one)."""
    pid = find_broker(server_properties, record)
    seen = brokers_seen(HOST, port)
    detail = ""
    if pid is None and seen:
        detail = "another broker (not started by assetbus) answers on this port"
    elif pid is None and expected == 1 and tcp_open(HOST, port):
        detail = "port in use by another process"
    elif pid is not None and not seen:
        detail = "process runs but does not answer (starting?)"
    elif pid is not None and seen < expected:
        detail = f"sees {seen} of {expected} brokers"
    detail = "\n".join(filter(None, [listener, detail]))
    return ServiceStatus(name, True, pid is not None and seen > 0, f"{HOST}:{port}", pid, log_file, pid is not None,
                         detail)


def external_status(servers: str) -> ServiceStatus:
    """Status of the broker named by KAFKA_BOOTSTRAP_SERVERS."""
    running = any(brokers_seen(host, port) > 0 for host, port in parse_bootstrap(servers))
    return ServiceStatus("kafka", False, running, servers, detail="" if running else "not reachable")
