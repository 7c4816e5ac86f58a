"""Secrets given as files: `NAME_FILE=/path` stands for `NAME=<the file's content>`, as Kubernetes and Docker
mount secrets; docs/security.md ("Secrets as files") says where it runs and what it refuses.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

from assetbus.producers.errors import EmitterError

__all__ = ["OWN_FILES", "PREFIXES", "SUFFIX", "SecretFileError", "expand_file_variables"]

SUFFIX = "_FILE"
PREFIXES = ("ASSETBUS_", "KAFKA_", "DATABASE_URL")
"""The variables whose `_FILE` form is read: assetbus's own, Kafka's and the database's."""
OWN_FILES = frozenset({"KAFKA_PROPERTIES_FILE"})
"""Variables that end in `_FILE` and are a file of their own (a Kafka client properties file), not a secret's."""


class SecretFileError(EmitterError, ValueError):
    """A `NAME_FILE` variable cannot stand for `NAME`: both are set, or the file cannot be read."""


def expand_file_variables(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Set `NAME` from the file `NAME_FILE` names, for every such variable of ours; the names set."""
    env = os.environ if environ is None else environ
    found = []
    for variable, path in sorted(env.items()):
        name = variable.removesuffix(SUFFIX)
        if name == variable or not name.startswith(PREFIXES) or not path or variable in OWN_FILES:
            continue
        try:
            value = Path(path).read_text(encoding="utf-8").removesuffix("\n").removesuffix("\r")
        except OSError as error:
            raise SecretFileError(f"{variable}={path}: cannot read it: {error.strerror or error}") from None
        if env.get(name) and env[name] != value:
            raise SecretFileError(f"both {name} and {variable} are set: keep one")
        if env.get(name) != value:
            env[name] = value
            found.append(name)
    return found
