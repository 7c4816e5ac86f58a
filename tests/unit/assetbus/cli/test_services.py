"""Keys where docs/security.md says they are: each `assetbus run` service is built as the CLI builds it, with a
private signing key *and* a JWKS configured, and only the API with Airflow configured receives the private key.
The persister and the API verify with the JWKS; the scheduler and the bridge get no key at all."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from assetbus.cli import services
from assetbus.cli.main import app
from assetbus.cli.options import build as options_build
from assetbus.producers.signing import SigningKey
from assetbus.settings import Settings


@dataclass
class Built:
    """What a `run` command handed its service: the settings models it built, the key reads, the API's minter."""

    configs: list[BaseModel] = field(default_factory=list)
    key_reads: int = 0
    minters: list[object] = field(default_factory=list)


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SigningKey:
    key = SigningKey.generate("EdDSA")
    (tmp_path / "current.pem").write_bytes(key.to_pem())
    (tmp_path / "jwks.json").write_text(json.dumps(key.jwks()))
    monkeypatch.setenv("ASSETBUS_TOKEN_SIGNING_KEY", str(tmp_path / "current.pem"))
    monkeypatch.setenv("ASSETBUS_TOKEN_JWKS", str(tmp_path / "jwks.json"))
    monkeypatch.delenv("ASSETBUS_TOKEN_SECRET", raising=False)
    monkeypatch.setenv("ASSETBUS_HOME", str(tmp_path / "home"))  # no local-mode secret to fall back on
    for name in ("ASSETBUS_AIRFLOW_URL", "ASSETBUS_AIRFLOW_USERNAME", "ASSETBUS_AIRFLOW_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    return key


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch, keys: SigningKey) -> Iterator[Built]:
    """Run commands build their settings and stop before serving anything."""
    record = Built()
    real_key = Settings.signing_key

    def build(model: Any, options: Any, **values: Any) -> Any:
        config = options_build(model, options, **values)
        record.configs.append(config)
        return config

    def signing_key(self: Settings) -> Any:
        record.key_reads += 1
        return real_key.fget(self)  # type: ignore[attr-defined]

    def serve_api(build_app: Any, config: Any, log_level: str) -> int:
        record.minters.append(build_app(0).state.minter)
        return 0

    monkeypatch.setattr(services, "build", build)
    monkeypatch.setattr(Settings, "signing_key", property(signing_key))
    monkeypatch.setattr(services, "_serve", lambda service: service.close())
    monkeypatch.setattr(services, "_freeze_startup_objects", lambda: None)
    monkeypatch.setattr("assetbus.consumers.api.server.serve", serve_api)
    yield record


def _run(*argv: str) -> None:
    result = CliRunner().invoke(app, ["run", *argv])
    assert result.exit_code == 0, (result.output, result.exception)


def _holds_no_private_key(value: object, key: SigningKey) -> bool:
    """No field, at any depth, is a SigningKey or the private key's PEM."""
    if isinstance(value, SigningKey):
        return False
    if isinstance(value, BaseModel):
        return all(_holds_no_private_key(getattr(value, name), key) for name in type(value).model_fields)
    if isinstance(value, str | bytes):
        return key.to_pem().decode() not in (value.decode() if isinstance(value, bytes) else value)
    if isinstance(value, dict):
        return all(_holds_no_private_key(v, key) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_holds_no_private_key(v, key) for v in value)
    return True


def _airflow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSETBUS_AIRFLOW_URL", "http://airflow:8080")
    monkeypatch.setenv("ASSETBUS_AIRFLOW_PASSWORD", "service-account")


def test_only_the_api_configured_for_airflow_is_named_a_signing_key_holder() -> None:
    assert set(services.SIGNING_KEY_HOLDERS) == {"api"}


@pytest.mark.parametrize("argv", [("persister",), ("api",)])
def test_a_verifying_service_gets_the_public_keys_only(argv: tuple[str, ...], built: Built,
                                                       keys: SigningKey, tmp_path: Path) -> None:
    _run(*argv)
    assert built.key_reads == 0 and built.minters in ([], [None])
    config = built.configs[-1]
    assert (config.token_jwks, config.token_secret) == (str(tmp_path / "jwks.json"), None)  # type: ignore[attr-defined]
    assert all(_holds_no_private_key(c, keys) for c in built.configs)


def test_the_scheduler_and_the_bridge_get_no_key(built: Built, keys: SigningKey,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _airflow(monkeypatch)
    _run("scheduler")
    _run("airflow-bridge", "--dag", "orders_by_partition")
    assert built.key_reads == 0
    services_built = built.configs[1::2]  # each command builds its log settings, then its service's
    assert [type(c).__name__ for c in services_built] == ["SchedulerConfig", "BridgeConfig"]
    for config in services_built:
        assert not {"token_jwks", "token_secret"} & set(type(config).model_fields)  # not even a public key
        assert _holds_no_private_key(config, keys)


def test_the_api_configured_for_airflow_is_the_one_service_that_reads_the_private_key(
        built: Built, keys: SigningKey, monkeypatch: pytest.MonkeyPatch) -> None:
    _airflow(monkeypatch)
    _run("api")
    assert built.key_reads == 1
    assert built.minters and built.minters[0] is not None  # POST /airflow/tokens signs with it
    assert all(_holds_no_private_key(c, keys) for c in built.configs)  # held by the minter, not the settings


def test_a_service_not_named_a_holder_cannot_load_the_key(keys: SigningKey) -> None:
    with pytest.raises(RuntimeError, match="must not hold the signing key"):
        services._signing_key("persister")
