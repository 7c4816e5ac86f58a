"""A single KRaft broker with the StandardAuthorizer: SCRAM users on a SASL_PLAINTEXT listener, the platform's
admin (a super user) on the plaintext one, and nothing allowed that no ACL allows.

Started per test module from the launcher's Kafka jars, in its own folder and on free ports; never the shared
broker. ACLs are created and deleted with the CreateAcls and DeleteAcls requests (aiokafka has no ACL API).
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.protocol.admin import CreateAclsRequest, DeleteAclsRequest

from assetbus.infra import kafka
from assetbus.infra.ports import free_port
from assetbus.infra.state import brokers_seen, wait_until
from assetbus.plan import Acl
from assetbus.producers.kafka import KafkaConnection, SecurityProtocol
from assetbus.settings import InfraSettings

HOST = "127.0.0.1"
MECHANISM = "SCRAM-SHA-512"
RESOURCE = {"topic": 2, "group": 3, "cluster": 4}
PATTERN = {"literal": 3, "prefixed": 4}
OPERATION = {"Read": 3, "Write": 4, "Create": 5, "Describe": 8, "DescribeConfigs": 10}
ALLOW = 3


@dataclass
class AclBroker:
    folder: Path
    users: dict[str, str]
    """SCRAM user → password."""
    port: int = field(default_factory=free_port)
    sasl_port: int = field(default_factory=free_port)
    controller_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    jvm_options: tuple[str, ...] = ()
    """Extra `-D...` options of the broker's JVM (and of the storage tool)."""

    @classmethod
    def for_users(cls, folder: Path, names: list[str]) -> AclBroker:
        return cls(folder, {name: secrets.token_urlsafe(16) for name in names})

    @property
    def log_file(self) -> Path:
        return self.folder / "kafka.log"

    def properties(self, infra: InfraSettings) -> str:
        """The launcher's single-node config, with a SASL_PLAINTEXT listener and the StandardAuthorizer."""
        rendered = kafka.render_server_properties(infra, self.folder / "data")
        props = dict(line.split("=", 1) for line in rendered.splitlines() if "=" in line and not line.startswith("#"))
        props |= {
            "controller.quorum.bootstrap.servers": f"{HOST}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{HOST}:{self.port},SASL_PLAINTEXT://{HOST}:{self.sasl_port},"
                         f"CONTROLLER://{HOST}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port},SASL_PLAINTEXT://{HOST}:{self.sasl_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": MECHANISM,
            f"listener.name.sasl_plaintext.{MECHANISM.lower()}.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",  # the plaintext listener: the platform's admin, and the broker itself
            "allow.everyone.if.no.acl.found": "false",
        }
        return "".join(f"{key}={value}\n" for key, value in props.items())

    def start(self, infra: InfraSettings) -> None:
        """Format the storage with the SCRAM users, start the broker, wait until it answers."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        config, log4j = self.folder / "server.properties", self.folder / "log4j2.properties"
        config.write_text(self.properties(infra))
        log4j.write_text(kafka.render_log4j2(self.log_file))
        java, libs = kafka.java_binary(), kafka.KafkaPaths.of(infra).libs
        base = [java, f"-Dlog4j2.configurationFile={log4j}", *self.jvm_options, "-cp", f"{libs}/*"]
        scram = [arg for user, password in self.users.items()
                 for arg in ("--add-scram", f"{MECHANISM}=[name={user},password={password}]")]
        subprocess.run([*base, kafka.STORAGE_TOOL, "format", "--standalone", "-t", kafka.random_cluster_id(),
                        "-c", str(config), *scram], check=True, capture_output=True)
        with (self.folder / "console.log").open("ab") as out:
            self.process = subprocess.Popen([*base[:1], "-Xmx512m", "-Xms256m", *base[1:], kafka.MAIN_CLASS,
                                             str(config)], stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        if not wait_until(lambda: self.process is not None and self.process.poll() is None
                          and brokers_seen(HOST, self.port, 1.0) == 1, kafka.START_TIMEOUT, interval=0.3):
            self.stop()
            raise RuntimeError(f"the {type(self).__name__} test broker did not start; see {self.log_file}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None

    def admin_connection(self) -> KafkaConnection:
        """The platform's admin: a super user on the plaintext listener."""
        return KafkaConnection(bootstrap_servers=(f"{HOST}:{self.port}",))

    def connection(self, user: str, **overrides: Any) -> KafkaConnection:
        """A SCRAM user's connection on the SASL_PLAINTEXT listener."""
        return KafkaConnection(bootstrap_servers=(f"{HOST}:{self.sasl_port}",),
                               security_protocol=SecurityProtocol.SASL_PLAINTEXT, sasl_mechanism=MECHANISM,
                               sasl_username=user, sasl_password=self.users[user], **overrides)

    def environment(self, user: str) -> dict[str, str]:
        """The same connection as `KAFKA_*` variables, for a service started as a process."""
        return {"KAFKA_BOOTSTRAP_SERVERS": f"{HOST}:{self.sasl_port}", "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                "KAFKA_SASL_MECHANISM": MECHANISM, "KAFKA_SASL_USERNAME": user,
                "KAFKA_SASL_PASSWORD": self.users[user]}

    async def grant(self, acls: list[Acl]) -> None:
        await self._each(acls, CreateAclsRequest, "creation_responses")

    async def revoke(self, acls: list[Acl]) -> None:
        await self._each(acls, DeleteAclsRequest, "filter_responses")

    async def _each(self, acls: list[Acl], request: Any, responses: str) -> None:
        admin = AIOKafkaAdminClient(**self.admin_connection().client_kwargs())
        await admin.start()
        try:
            for acl in acls:
                response = await admin._send_request(request(
                    RESOURCE[acl.resource_type], acl.resource_name, PATTERN[acl.pattern_type], acl.principal, "*",
                    OPERATION[acl.operation], ALLOW))
                (answer,) = response.to_object()[responses]
                if answer["error_code"]:
                    raise RuntimeError(f"{acl}: {answer['error_message']}")
        finally:
            await admin.close()
