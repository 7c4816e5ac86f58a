"""The wire contract's version. Bump it only for changes old readers cannot ignore."""

SCHEMA_VERSION = 1
"""Version carried by every message; readers accept messages of this version."""

SUPPORTED_SCHEMA_VERSIONS = frozenset({1})
