"""The interface every SASL mechanism implements, as a token exchange with no I/O: `first()` is the client's
initial token, `respond(challenge)` answers each server token (None when the exchange is over). The
connection drives it through SaslHandshake and SaslAuthenticate; login.py picks the mechanism a
configuration asks for."""

from __future__ import annotations

from typing import Protocol


class Mechanism(Protocol):
    name: str

    def first(self) -> bytes: ...

    def respond(self, challenge: bytes) -> bytes | None: ...
