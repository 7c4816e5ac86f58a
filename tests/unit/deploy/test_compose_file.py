"""docker-compose.yml validates without an engine and runs the launcher's Kafka version."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from assetbus.settings import InfraSettings

COMPOSE = Path(__file__).resolve().parents[3] / "docker-compose.yml"


def test_compose_file_validates() -> None:
    if shutil.which("docker-compose") is None:
        pytest.fail("docker-compose is not installed; `make test` installs Debian's package (compose-check)")
    env = {**os.environ, "ASSETBUS_TOKEN_SECRET": "validation-only"}
    result = subprocess.run(["docker-compose", "-f", str(COMPOSE), "config", "-q"], env=env,
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_compose_kafka_is_the_launchers_version() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert services["kafka"]["image"] == f"apache/kafka:{InfraSettings().kafka_version}"
