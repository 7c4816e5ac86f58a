"""The head revision(s) of the shipped migrations, read from the version files' `revision` and
`down_revision` lines: what Alembic's `ScriptDirectory.get_heads()` answers, without importing Alembic
(and Mako), which every service would otherwise load at start-up for its readiness check."""

from __future__ import annotations

import ast
from pathlib import Path

from assetbus.migrations import MIGRATIONS_DIR

__all__ = ["migration_heads"]


def _revisions(version_file: Path) -> tuple[str, set[str]]:
    """(revision, the revisions it follows) of one version file: its module-level literals."""
    found: dict[str, object] = {}
    for node in ast.parse(version_file.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in ("revision", "down_revision"):
            found[target.id] = ast.literal_eval(value)
    revision, down = found.get("revision"), found.get("down_revision")
    if not isinstance(revision, str):
        raise ValueError(f"{version_file}: no string `revision`")
    follows = {down} if isinstance(down, str) else set(down) if isinstance(down, (tuple, list)) else set()
    return revision, {str(r) for r in follows}


def migration_heads(versions: Path = MIGRATIONS_DIR / "versions") -> set[str]:
    """The revisions no other revision follows."""
    revisions: set[str] = set()
    followed: set[str] = set()
    for version_file in versions.glob("*.py"):
        revision, follows = _revisions(version_file)
        revisions.add(revision)
        followed |= follows
    return revisions - followed
