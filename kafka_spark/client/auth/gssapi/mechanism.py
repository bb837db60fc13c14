"""SASL/GSSAPI (Kerberos, RFC 4752) as Kafka's Java client speaks it, through the maintained `gssapi` binding.

The exchange, carried in SaslAuthenticate requests after SaslHandshake(GSSAPI):
1. GSS context tokens both ways until the context is complete (an AP-REQ out, the broker's AP-REP back:
   mutual authentication); an empty token then asks the broker for the next step;
2. the broker's 4-byte wrapped security-layer offer (bit mask, then its maximum message size);
3. our wrapped answer: "no security layer" (Kafka never uses integrity or confidentiality layers), size 0
   (RFC 4752: zero without a layer), then the authorization id (Java sends the client principal);
4. the broker's empty final answer.

No I/O here besides what the Kerberos library does to reach the KDC (a service ticket for the broker).
"""

from __future__ import annotations

import ipaddress
import socket
import time
from typing import TYPE_CHECKING, Any, Protocol

from kafka_spark.client.auth.gssapi.credentials import (
    SERVER_UNKNOWN,
    credentials,
    gss_detail,
    kerberos_login,
    load_gssapi,
    login_error,
    minor_code,
)
from kafka_spark.client.auth.gssapi.renewal import renewal_for
from kafka_spark.errors import AuthenticationError

if TYPE_CHECKING:
    from kafka_spark.client.auth.gssapi.credentials import KerberosLogin
    from kafka_spark.client.auth.mechanism import Mechanism
    from kafka_spark.client.config import ClientConfig

# RFC 4752 security-layer bits
NO_SECURITY_LAYER = 0x01
INTEGRITY = 0x02
CONFIDENTIALITY = 0x04
# GSS requirement flags (RFC 2744): the broker proves itself too (mutual authentication); never delegation
MUTUAL = 2
OUT_OF_SEQUENCE = 8


def security_layer_reply(offer: bytes, authzid: str) -> bytes:
    """Our answer (before wrapping) to the broker's unwrapped offer: no security layer, size 0, `authzid`."""
    if len(offer) != 4:
        raise AuthenticationError(f"GSSAPI: the broker's security-layer offer has {len(offer)} bytes, expected 4")
    if not offer[0] & NO_SECURITY_LAYER:
        raise AuthenticationError(f"GSSAPI: the broker offers only security layers 0x{offer[0]:02x} "
                                  "(integrity/confidentiality), which Kafka clients do not use")
    return bytes([NO_SECURITY_LAYER, 0, 0, 0]) + authzid.encode("utf-8")


def kerberos_host(host: str) -> str:
    """The host in the broker's service principal, as Java's client names it (`InetAddress.getHostName()`):
    a name as given; an IP address reverse-resolved, kept only if that name resolves back to the address."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host.lower()
    cached = _HOST_NAMES.get(host)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    name = _reverse_resolved(host)
    _HOST_NAMES[host] = (time.monotonic() + _HOST_NAME_SECONDS, name)
    return name


# Every connection names its broker: remember lookups as long as Java's InetAddress cache does (30 s), so an
# executor opening many connections does not wait for reverse DNS each time
_HOST_NAME_SECONDS = 30.0
_HOST_NAMES: dict[str, tuple[float, str]] = {}


def _reverse_resolved(address: str) -> str:
    try:
        name = socket.gethostbyaddr(address)[0]
        forward = {info[4][0] for info in socket.getaddrinfo(name, None)}
    except (OSError, UnicodeError):
        return address
    return name.lower() if address in forward else address


class _Context(Protocol):
    """The part of `gssapi.SecurityContext` the exchange uses."""

    @property
    def complete(self) -> bool: ...

    def step(self, token: bytes | None = None) -> bytes | None: ...

    def wrap(self, message: bytes, encrypt: bool) -> Any: ...

    def unwrap(self, message: bytes) -> Any: ...


class GssapiMechanism:
    """One GSSAPI authentication with one broker."""

    name = "GSSAPI"

    def __init__(self, context: _Context, authzid: str, target: str, login: KerberosLogin) -> None:
        self._context = context
        self._authzid = authzid
        self._target = target
        self._login = login
        self._state = "context"
        self._asked = False

    def first(self) -> bytes:
        return self._step(None)

    def respond(self, challenge: bytes) -> bytes | None:
        if self._state == "context":
            return self._step(challenge)
        if self._state == "layer":
            if not challenge and not self._asked:
                # a broker whose side completed without a token of its own: ask for the offer once
                self._asked = True
                return b""
            self._state = "done"
            return self._layer(challenge)
        return None  # the broker's final, empty answer

    def _step(self, token: bytes | None) -> bytes:
        lib = load_gssapi()
        try:
            out = self._context.step(token)
        except lib.exceptions.GSSError as exc:
            raise self._error(exc) from None
        if self._context.complete:
            self._state = "layer"
        # an empty token asks the broker for its security-layer offer once our side is done
        return out or b""

    def _layer(self, challenge: bytes) -> bytes:
        lib = load_gssapi()
        try:
            offer = self._context.unwrap(challenge).message
            reply = security_layer_reply(offer, self._authzid)
            return bytes(self._context.wrap(reply, False).message)
        except lib.exceptions.GSSError as exc:
            raise AuthenticationError(f"GSSAPI security-layer step with {self._target} failed "
                                      f"({gss_detail(exc)})") from None

    def _error(self, exc: Exception) -> Exception:
        if minor_code(exc) == SERVER_UNKNOWN:
            return AuthenticationError(f"GSSAPI: the KDC knows no service principal for {self._target}; check "
                                       f"sasl.kerberos.service.name and that the broker's principal is "
                                       f"<service>/<broker host> ({gss_detail(exc)})")
        error = login_error(self._login, exc)
        return AuthenticationError(f"{error} (authenticating to {self._target})") \
            if isinstance(error, AuthenticationError) else error

    def __repr__(self) -> str:
        return f"GSSAPI mechanism ({self._target}, {self._state})"


def gssapi_mechanism(config: ClientConfig, host: str) -> Mechanism:
    """The Kerberos client mechanism for the broker at `host`."""
    lib = load_gssapi()
    login = kerberos_login(config)
    service = (config.sasl_kerberos_service_name or "").strip()
    target = f"{service}@{kerberos_host(host)}"
    if login.keytab is None:
        renewal = renewal_for(login, config.sasl_kerberos_kinit_cmd, config.sasl_kerberos_ticket_renew_window_factor,
                              config.sasl_kerberos_ticket_renew_jitter, config.sasl_kerberos_min_time_before_relogin)
        renewal.maybe_renew()
    creds = credentials(login)
    try:
        authzid = str(creds.name)
        context = lib.SecurityContext(name=lib.Name(target, lib.NameType.hostbased_service), creds=creds,
                                      usage="initiate", flags=MUTUAL | OUT_OF_SEQUENCE)
    except lib.exceptions.GSSError as exc:
        raise login_error(login, exc) from None
    return GssapiMechanism(context, authzid, target, login)
