"""Alembic environment and versions: the only way the database schema changes."""

from pathlib import Path

__all__ = ["MIGRATIONS_DIR"]

MIGRATIONS_DIR = Path(__file__).resolve().parent
