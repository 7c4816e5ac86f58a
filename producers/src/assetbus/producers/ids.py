"""Command ids: random (version 4) UUIDs, about twice as cheap as `uuid.uuid4()` per emission.

`uuid.uuid4()` makes one `os.urandom(16)` call and runs `UUID.__init__`'s argument checks for
every id. Here the random bytes come from a pooled `os.urandom` buffer (the same source, read 4 KiB
at a time), and the UUID is built from its integer. The pool is dropped in a forked child, so a
parent and its child never hand out the same ids.
"""

from __future__ import annotations

import os
import uuid

__all__ = ["new_command_id"]

_POOL_BYTES = 4096
_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_SET = (0x8000 << 48) | (0x4000 << 64)  # the RFC 4122 variant and version 4, as uuid.uuid4() sets them
_pool = bytearray()


def _from_int(value: int) -> uuid.UUID:
    """`uuid.UUID(int=value)` without the argument checks: its two slots (`int`, `is_safe`, the same on
    every supported Python, 3.10 to 3.13), set as `__init__` sets them."""
    made = object.__new__(uuid.UUID)
    object.__setattr__(made, "int", value)
    object.__setattr__(made, "is_safe", uuid.SafeUUID.unknown)
    return made


def new_command_id() -> uuid.UUID:
    """A fresh random UUID (version 4), like `uuid.uuid4()`."""
    if not _pool:
        _pool.extend(os.urandom(_POOL_BYTES))
    raw = _pool[-16:]
    del _pool[-16:]
    return _from_int((int.from_bytes(raw, "big") & _CLEAR) | _SET)


def _forget_pool() -> None:
    _pool.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)
