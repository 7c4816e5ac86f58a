"""A single KRaft broker whose SASL_PLAINTEXT listener takes OAUTHBEARER tokens, validated by Kafka's own
`OAuthBearerValidatorCallbackHandler` against the JWKS of a local OIDC token server (client credentials, RS256).

The token server runs in a thread of the test process (`http.server`, PyJWT, cryptography); the broker runs from the
launcher's Kafka jars in its own folder, on ports 28092-28095: never the shared broker's or the other cluster
tests', and below Linux's ephemeral range (32768-60999), where any client connection may hold a port for a while.
Both are started and stopped by the test's fixtures; `stop()` may be called any number of times.
"""

from __future__ import annotations

import base64
import json
import secrets
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from assetbus.producers.kafka import KafkaConnection, SecurityProtocol
from assetbus.settings import InfraSettings
from tests.cluster.acl_broker import MECHANISM, AclBroker

HOST = "127.0.0.1"
SASL_PORT, CONTROLLER_PORT, PLAIN_PORT, TOKEN_PORT = 28092, 28093, 28094, 28095
AUDIENCE = "assetbus-kafka"
VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


@dataclass
class TokenServer:
    """An OIDC provider's two endpoints: `POST /token` (client credentials, HTTP Basic) and `GET /jwks`."""

    clients: dict[str, str]
    """client id → secret."""
    lifetime_s: int = 3600
    port: int = TOKEN_PORT
    audience: dict[str, str] = field(default_factory=dict)
    """client id → the audience its tokens carry (default `AUDIENCE`): another one makes the broker refuse them."""
    lifetimes: dict[str, int] = field(default_factory=dict)
    """client id → the lifetime of its tokens in seconds (default `lifetime_s`)."""
    issued: dict[str, int] = field(default_factory=dict)
    issued_at: dict[str, list[float]] = field(default_factory=dict)
    refused: int = 0
    kid: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    key: rsa.RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(public_exponent=65537,
                                                                                    key_size=2048))
    _server: ThreadingHTTPServer | None = None

    @property
    def issuer(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    def jwks(self) -> dict[str, Any]:
        jwk = RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}]}

    def grant(self, authorization: str, form: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        scheme, _, encoded = authorization.partition(" ")
        client_id, _, secret = base64.b64decode(encoded or "").decode().partition(":")
        client_id, secret = unquote(client_id), unquote(secret)
        if form.get("grant_type") != ["client_credentials"]:
            return 400, {"error": "unsupported_grant_type"}
        if scheme != "Basic" or not secrets.compare_digest(self.clients.get(client_id, "\0"), secret):
            self.refused += 1
            return 401, {"error": "invalid_client"}
        now, lifetime = time.time(), self.lifetimes.get(client_id, self.lifetime_s)
        claims = {"sub": client_id, "iss": self.issuer, "aud": self.audience.get(client_id, AUDIENCE),
                  "iat": int(now), "exp": int(now) + lifetime, "scope": " ".join(form.get("scope", ["kafka"]))}
        token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.kid})
        self.issued[client_id] = self.issued.get(client_id, 0) + 1
        self.issued_at.setdefault(client_id, []).append(now)
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": lifetime}

    def start(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/jwks":
                    self._answer(200, server.jwks())
                else:
                    self._answer(404, {"error": "not_found"})

            def do_POST(self) -> None:
                if self.path != "/token":
                    self._answer(404, {"error": "not_found"})
                    return
                length = int(self.headers.get("Content-Length", "0"))
                form = parse_qs(self.rfile.read(length).decode())
                self._answer(*server.grant(self.headers.get("Authorization", ""), form))

            def log_message(self, format: str, *args: Any) -> None:
                pass

        if self._server is None:
            self._server = ThreadingHTTPServer((HOST, self.port), Handler)
            threading.Thread(target=self._server.serve_forever, name="oauth-token-server", daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


@dataclass
class OAuthBroker(AclBroker):
    """The ACL broker's single node, without an authorizer: OAUTHBEARER on SASL_PLAINTEXT (validated against
    `tokens`' JWKS), PLAINTEXT for the broker itself. Kafka 4.x fetches only the URLs its JVM allows."""

    users: dict[str, str] = field(default_factory=dict)
    port: int = PLAIN_PORT
    sasl_port: int = SASL_PORT
    controller_port: int = CONTROLLER_PORT
    tokens: TokenServer = field(kw_only=True)

    def __post_init__(self) -> None:
        self.jvm_options = (f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={self.tokens.jwks_url}",)

    def properties(self, infra: InfraSettings) -> str:
        """The ACL broker's listeners, with OAUTHBEARER instead of SCRAM and no authorizer."""
        props = dict(line.split("=", 1) for line in super().properties(infra).splitlines())
        for key in ("authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found",
                    f"listener.name.sasl_plaintext.{MECHANISM.lower()}.sasl.jaas.config"):
            del props[key]
        listener = "listener.name.sasl_plaintext.oauthbearer"
        props |= {
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            f"{listener}.sasl.server.callback.handler.class": VALIDATOR,
            f"{listener}.sasl.jaas.config":
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
            "sasl.oauthbearer.jwks.endpoint.url": self.tokens.jwks_url,
            "sasl.oauthbearer.expected.audience": AUDIENCE,
            "sasl.oauthbearer.expected.issuer": self.tokens.issuer,
        }
        return "".join(f"{key}={value}\n" for key, value in props.items())

    def start(self, infra: InfraSettings) -> None:
        """Start the broker (the token server must be up: the broker reads its JWKS) on its fixed ports."""
        busy = [port for port in (self.sasl_port, self.controller_port, self.port) if not _port_free(port)]
        if busy:
            raise RuntimeError(f"the OAuth test broker's ports {busy} are taken (a leftover broker?)")
        super().start(infra)

    def connection(self, user: str, secret: str | None = None, **overrides: Any) -> KafkaConnection:
        """A client of the OAUTHBEARER listener, signing in with the credentials of the OIDC client `user`."""
        return KafkaConnection(bootstrap_servers=(f"{HOST}:{self.sasl_port}",),
                               security_protocol=SecurityProtocol.SASL_PLAINTEXT, sasl_mechanism="OAUTHBEARER",
                               sasl_oauth_token_url=self.tokens.token_url, sasl_oauth_client_id=user,
                               sasl_oauth_client_secret=secret or self.tokens.clients[user],
                               sasl_oauth_scope="kafka", **overrides)

    def environment(self, user: str, secret: str | None = None) -> dict[str, str]:
        """The same connection as `KAFKA_*` variables, for a service started as a process."""
        return {"KAFKA_BOOTSTRAP_SERVERS": f"{HOST}:{self.sasl_port}", "KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                "KAFKA_SASL_MECHANISM": "OAUTHBEARER", "KAFKA_SASL_OAUTH_TOKEN_URL": self.tokens.token_url,
                "KAFKA_SASL_OAUTH_CLIENT_ID": user,
                "KAFKA_SASL_OAUTH_CLIENT_SECRET": secret or self.tokens.clients[user],
                "KAFKA_SASL_OAUTH_SCOPE": "kafka"}


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True
