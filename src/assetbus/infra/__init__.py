"""Local infrastructure launcher: a real Kafka broker (KRaft) and PostgreSQL, without Docker."""

from __future__ import annotations

from assetbus.infra.errors import InfraError
from assetbus.infra.launcher import down, secure_client_environment, status, up
from assetbus.infra.state import InfraStatus, ServiceStatus

__all__ = ["InfraError", "InfraStatus", "ServiceStatus", "down", "secure_client_environment", "status", "up"]
