"""Token verification with a cache: a task sends many commands with one token; verify its signature once.

A token that verified once keeps verifying (the signature is a function of the bytes and the secret; `iat`
and `nbf` only get further in the past) except for expiry, which is checked on every use.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from assetbus.consumers.auth.tokens import ATTEMPT_ENDED, ATTEMPT_ENDED_REASON, TokenError, TokenVerifier
from assetbus.schemas import EmitterClaims, Provenance
from assetbus.schemas.codecs import SourceTuple, source_tuple


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    """What the persister needs of a valid token: who it vouches for, what it may do, and until when."""

    provenance: Provenance
    claims: EmitterClaims
    expires_at: int
    source: SourceTuple
    source_json: str
    dedupe_scope: str


class CachedTokenVerifier:
    """Remembers up to `size` valid tokens (least recently used out); invalid ones are never cached."""

    def __init__(self, verifier: TokenVerifier, *, size: int = 4096,
                 clock: Callable[[], float] = time.time) -> None:
        self._verifier = verifier
        self._size = size
        self._clock = clock
        self._valid: OrderedDict[str, VerifiedToken] = OrderedDict()

    def verify(self, token: str) -> VerifiedToken:
        """The token's provenance and derived values; raises TokenError like TokenVerifier.verify."""
        known = self._valid.get(token)
        if known is not None:
            if self._clock() > known.expires_at + self._verifier.leeway_seconds:
                del self._valid[token]
                if known.claims.attested:
                    raise TokenError(ATTEMPT_ENDED_REASON, code=ATTEMPT_ENDED)
                raise TokenError("token expired")
            self._valid.move_to_end(token)
            return known
        claims = self._verifier.verify(token)
        provenance = claims.provenance()
        verified = VerifiedToken(provenance, claims, claims.exp, source_tuple(provenance), provenance.model_dump_json(),
                                 provenance.dedupe_scope())
        self._valid[token] = verified
        if len(self._valid) > self._size:
            self._valid.popitem(last=False)
        return verified
