"""The heads read from the version files are Alembic's own, for the shipped migrations and for a branchy tree."""

from __future__ import annotations

from pathlib import Path

from alembic.script import ScriptDirectory

from assetbus.migrations import MIGRATIONS_DIR
from assetbus.migrations.heads import migration_heads


def test_the_shipped_migrations_have_the_heads_alembic_finds() -> None:
    heads = migration_heads()
    assert heads == set(ScriptDirectory(str(MIGRATIONS_DIR)).get_heads())
    assert len(heads) == 1


def _version(folder: Path, revision: str, down: str) -> None:
    (folder / f"{revision}_step.py").write_text(
        f'"""step {revision}"""\n\nrevision: str = "{revision}"\ndown_revision = {down}\n'
        "branch_labels = None\ndepends_on = None\n\n\ndef upgrade() -> None:\n    pass\n")


def test_two_branches_are_two_heads_and_a_merge_is_one(tmp_path: Path) -> None:
    versions = tmp_path / "versions"
    versions.mkdir()
    _version(versions, "a1", "None")
    _version(versions, "b1", '"a1"')
    _version(versions, "c1", '"a1"')
    assert migration_heads(versions) == {"b1", "c1"} == set(ScriptDirectory(str(tmp_path)).get_heads())
    _version(versions, "d1", '("b1", "c1")')
    assert migration_heads(versions) == {"d1"} == set(ScriptDirectory(str(tmp_path)).get_heads())
