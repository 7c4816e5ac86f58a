"""What the contract needs from Python 3.11 on, for the SDK's Python 3.10 workers."""

from __future__ import annotations

import sys
from datetime import timezone

__all__ = ["UTC", "StrEnum"]

UTC = timezone.utc

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - exercised by the SDK-alone test on Python 3.10
    from enum import Enum

    class StrEnum(str, Enum):
        """`enum.StrEnum` of 3.11: members are strings, and str() gives the value."""

        def __str__(self) -> str:
            return str(self.value)
