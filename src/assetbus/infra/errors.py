"""The one error type of the launcher: a sentence telling the user what to do."""

from __future__ import annotations


class InfraError(Exception):
    """Local infrastructure could not be started, stopped or reached."""
