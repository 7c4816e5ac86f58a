"""The Airflow account assetbus uses: a plain value, light to import (the settings models hold one), with
exactly one way to authenticate (a user name and password, a static token, or an `httpx.Auth` factory).
"""

from __future__ import annotations

import pkgutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import httpx

__all__ = ["AirflowAccount", "AirflowAuthMethod", "load_auth"]

AirflowAuthMethod = Literal["password", "token", "auth"]


@dataclass(frozen=True)
class AirflowAccount:
    """Where Airflow's API server is and how assetbus authenticates there (exactly one method)."""

    url: str
    username: str = ""
    password: str = field(default="", repr=False)
    timeout_s: float = 10.0
    token: str = field(default="", repr=False)
    """A static bearer token (`ASSETBUS_AIRFLOW_TOKEN`)."""
    auth: str = ""
    """`package.module:Factory`, an `httpx.Auth` subclass or a callable returning one (`ASSETBUS_AIRFLOW_AUTH`)."""

    def __post_init__(self) -> None:
        configured = [name for name in ("password", "token", "auth") if getattr(self, name)]
        if len(configured) != 1:
            raise ValueError(f"an Airflow account needs exactly one of password, token or auth, got "
                             f"{', '.join(configured) or 'none'}")

    @property
    def method(self) -> AirflowAuthMethod:
        return "password" if self.password else "token" if self.token else "auth"

    def describe(self) -> str:
        """Who assetbus is in Airflow, for error messages (never the secret)."""
        return {"password": f"the account {self.username!r}", "token": "the static token (ASSETBUS_AIRFLOW_TOKEN)",
                "auth": f"the auth {self.auth!r} (ASSETBUS_AIRFLOW_AUTH)"}[self.method]


def load_auth(path: str) -> httpx.Auth:
    """The `httpx.Auth` that `package.module:Factory` makes; ValueError with one line saying what is wrong."""
    import httpx

    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{path!r} is not an import path of the form package.module:Factory")
    try:
        factory = pkgutil.resolve_name(path)
    except ImportError as error:
        raise ValueError(f"cannot import {module_name!r}: {error}") from error
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no {attribute!r}") from None
    if not callable(factory):
        raise ValueError(f"{path!r} is not callable (an httpx.Auth subclass, or a function returning one)")
    try:
        auth = factory()
    except Exception as error:  # a factory of the platform's: whatever it raises, say so in one line
        raise ValueError(f"{path}() failed: {type(error).__name__}: {error}") from error
    if not isinstance(auth, httpx.Auth):
        raise ValueError(f"{path}() returned a {type(auth).__name__}, not an httpx.Auth")
    return auth
