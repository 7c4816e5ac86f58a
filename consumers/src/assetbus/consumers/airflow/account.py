"""The Airflow account assetbus uses: a plain value, light to import (the settings models hold one)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["AirflowAccount"]


@dataclass(frozen=True)
class AirflowAccount:
    """Where Airflow's API server is and which account assetbus uses there."""

    url: str
    username: str
    password: str = field(repr=False)
    timeout_s: float = 10.0
