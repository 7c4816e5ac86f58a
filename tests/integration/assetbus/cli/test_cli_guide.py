"""Every bash block of docs/cli.md runs, in order, as one session (environment variables and background
jobs carry over), against a fresh database and topic prefix; `# exit code: N` blocks must end so."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from pathlib import Path

from assetbus.schemas import Topics
from assetbus.settings import Settings

ROOT = Path(__file__).resolve().parents[4]
GUIDE = ROOT / "docs" / "cli.md"


def blocks() -> list[tuple[int, str]]:
    """(expected exit code, script) of each ```bash block."""
    found = []
    for script in re.findall(r"```bash\n(.*?)```", GUIDE.read_text(), flags=re.S):
        expected = re.match(r"# exit code: (\d+)", script)
        found.append((int(expected.group(1)) if expected else 0, script))
    return found


async def test_every_command_of_the_cli_guide_runs(infra: Settings, db_url: str,
                                                   topics: Topics, token_secret: str, tmp_path: Path) -> None:
    for name in ("examples", "docs"):
        (tmp_path / name).symlink_to(ROOT / name)
    state = tmp_path / "session.env"
    state.write_text("")
    env = {**os.environ, "DATABASE_URL": db_url, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    assert len(blocks()) >= 15
    try:
        for expected, script in blocks():
            if script.rstrip().endswith("&"):  # a service for the rest of the session: its pid is kept
                script = f"{script.rstrip()}\necho $! >> {tmp_path / 'jobs'}"
            wrapped = f"set -e\n. {state}\n{script}\nexport -p > {state}\n"
            process = await asyncio.create_subprocess_exec("bash", "-c", wrapped, cwd=tmp_path, env=env,
                                                           stdout=asyncio.subprocess.PIPE,
                                                           stderr=asyncio.subprocess.STDOUT)
            out, _ = await asyncio.wait_for(process.communicate(), timeout=180)
            assert process.returncode == expected, f"{script}\n--- exit code {process.returncode}:\n{out.decode()}"
            assert "Traceback" not in out.decode(), out.decode()
    finally:
        jobs = tmp_path / "jobs"
        background = jobs.read_text().split() if jobs.exists() else []
        for pid in background:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGTERM)
