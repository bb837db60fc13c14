"""One broker connection: TCP (+TLS), ApiVersions negotiation, SASL, pipelined requests.

Requests are written as soon as `send` is called and answered in order, so several can be in flight;
`receive` reads responses until the one asked for has arrived, keeping the others for their owners.
Responses are read in large chunks through a reused read-ahead buffer; a large frame is received
straight into its own buffer, which its decoded ``records`` slices point into.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from kafka_spark.client.auth.login import mechanism_for
from kafka_spark.client.config import ClientConfig
from kafka_spark.client.errors import ConnectionClosedError, RequestTimeoutError
from kafka_spark.client.net.tls import certificate_error
from kafka_spark.errors import (
    AuthenticationError,
    DecodeError,
    KafkaConnectionError,
    KafkaSparkError,
    UnsupportedVersionError,
)
from kafka_spark.errors.codes import broker_error, error_for_code
from kafka_spark.protocol import (
    ApiKey,
    BrokerVersions,
    GatheredFrame,
    api_versions_request,
    decode_response,
    encode_request,
    expects_response,
    parse_api_versions_response,
    pick_version,
    read_frame_size,
)

log = logging.getLogger(__name__)

_READ_AHEAD = 256 * 1024
_MIN_MAX_FRAME = 100 * 1024 * 1024
_UNSUPPORTED_VERSION = 35
# How much earlier than the broker's session end we stop trusting the session (at most 1% of it): the broker's
# clock started one network delay before ours. More would eat into Java's re-authentication window (85-100%).
_SESSION_MARGIN_S = 0.05


# how many buffers one sendmsg() takes (Linux: 1024)
_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") and "SC_IOV_MAX" in os.sysconf_names else 1024


def send_segments(sock: socket.socket, segments: list[memoryview]) -> None:
    """Write `segments` in order, as one `sendall` of their concatenation would, without concatenating them."""
    pending = [s for s in segments if s.nbytes]
    while pending:
        sent = sock.sendmsg(pending[:_IOV_MAX])
        while pending and sent >= pending[0].nbytes:
            sent -= pending.pop(0).nbytes
        if sent:
            pending[0] = pending[0][sent:]


class InFlight:
    """A request written to the socket and not yet answered."""

    __slots__ = ("api_key", "correlation_id", "error", "frame", "response", "sent_at", "version")

    def __init__(self, api_key: int, version: int, correlation_id: int) -> None:
        self.api_key = api_key
        self.version = version
        self.correlation_id = correlation_id
        self.sent_at = time.monotonic()
        self.response: dict[str, Any] | None = None
        self.frame: bytes | bytearray | None = None
        self.error: BaseException | None = None

    @property
    def done(self) -> bool:
        """True once answered or failed."""
        return self.response is not None or self.error is not None


class BrokerConnection:
    """A connection to one broker; `connect()` performs TLS, version negotiation and SASL."""

    def __init__(self, host: str, port: int, config: ClientConfig, node_id: int | None = None,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        self.config = config
        self._ssl_context = ssl_context
        self._sock: socket.socket | None = None
        self._lock = threading.RLock()
        self._pending: deque[InFlight] = deque()
        self._correlation = 0
        self._buf = bytearray(_READ_AHEAD)
        self._view = memoryview(self._buf)
        self._start = 0
        self._end = 0
        self._throttle_until = 0.0
        # KIP-368: when to re-authenticate (85-95% of the session the broker granted), and when it ends
        self._reauth_at: float | None = None
        self._session_ends: float | None = None
        self.reauthentications = 0  # KIP-368 re-authentications on this connection, for diagnostics and tests
        self._max_frame = max(_MIN_MAX_FRAME, 2 * config.fetch_max_bytes)
        # Frames up to this size get their whole buffer at once; a larger size is only a claim until
        # the bytes arrive, so those grow as they do (a lying length costs what was really sent).
        self._trusted_frame = 2 * config.fetch_max_bytes
        self._deadline: float | None = None
        self.versions: BrokerVersions | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    @property
    def address(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        """True while the socket is open and authenticated."""
        return self._sock is not None and self.versions is not None

    @property
    def in_flight(self) -> int:
        """Requests written and not yet answered."""
        return len(self._pending)

    def connect(self) -> BrokerConnection:
        """Open the socket, wrap TLS, negotiate API versions and authenticate."""
        with self._lock:
            if self.connected:
                return self
            self._open_socket()
            try:
                self._negotiate_versions()
                if self.config.uses_sasl:
                    self._authenticate()
            except BaseException:
                self.close()
                raise
            return self

    def _open_socket(self) -> None:
        timeout = self.config.connection_setup_timeout_ms / 1000
        try:
            raw = socket.create_connection((self.host, self.port), timeout=timeout)
        except OSError as exc:
            raise KafkaConnectionError(f"cannot connect to broker {self._name()}: {exc}") from None
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.config.receive_buffer_bytes > 0:
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.config.receive_buffer_bytes)
            if self.config.send_buffer_bytes > 0:
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.config.send_buffer_bytes)
            sock: socket.socket = raw
            if self._ssl_context is not None:
                sock = self._ssl_context.wrap_socket(raw, server_hostname=self.host)
        except OSError as exc:
            raw.close()
            raise certificate_error(exc, self._name(), self.config) or KafkaConnectionError(
                f"TLS handshake with broker {self._name()} failed: {exc}") from None
        sock.settimeout(self.config.request_timeout_ms / 1000)
        self._sock = sock
        self._start = self._end = 0

    def close(self, reason: str = "closed by the client") -> None:
        """Close the socket; requests still in flight fail with `ConnectionClosedError`."""
        with self._lock:
            sock, self._sock = self._sock, None
            self.versions = None
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
            while self._pending:
                self._pending.popleft().error = ConnectionClosedError(f"broker {self._name()}: {reason}")

    def __enter__(self) -> BrokerConnection:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "connected" if self.connected else "closed"
        return f"BrokerConnection({self._name()}, {self.config.security_protocol}, {state})"

    def _name(self) -> str:
        return f"{self.node_id} at {self.address}" if self.node_id is not None else self.address

    # ---- versions and authentication ----------------------------------------------------------

    def _negotiate_versions(self) -> None:
        fallback = self.config.broker_version_fallback
        if not self.config.api_version_request:
            self.versions = BrokerVersions.for_legacy_broker(fallback or "0.9.0")
            return
        version = pick_version(ApiKey.API_VERSIONS, 0, 32767)
        for _ in range(3):
            frame = api_versions_request(self._next_correlation(), self.config.client_id, version)
            try:
                self._write(frame)
                body = self._read_frame()
            except ConnectionClosedError as exc:
                if fallback is None:
                    # keep the socket's own cause (reset, EOF): a reset by a network fault is not an old broker
                    raise ConnectionClosedError(
                        f"broker {self._name()} closed the connection on ApiVersions ({exc}); if it always does, "
                        "it may predate Kafka 0.10 (set broker.version.fallback) or expect TLS/SASL "
                        "(check security.protocol)") from None
                self.close()
                self._open_socket()
                self.versions = BrokerVersions.for_legacy_broker(fallback)
                return
            _, response = parse_api_versions_response(body, version)
            if response.get("error_code") == _UNSUPPORTED_VERSION and response.get("api_keys"):
                ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}
                lo, hi = ranges.get(ApiKey.API_VERSIONS, (0, 0))
                version = pick_version(ApiKey.API_VERSIONS, lo, hi)
                continue
            self.versions = BrokerVersions.from_response(response)
            return
        raise UnsupportedVersionError(f"broker {self._name()}: ApiVersions negotiation did not converge")

    def _authenticate(self) -> None:
        mechanism = mechanism_for(self.config, self.host)
        handshake_version = self.version(ApiKey.SASL_HANDSHAKE)
        response = self._call_now(ApiKey.SASL_HANDSHAKE, handshake_version, {"mechanism": mechanism.name})
        if response["error_code"]:
            enabled = ", ".join(response.get("mechanisms") or []) or "none"
            error = error_for_code(response["error_code"], f"SASL handshake with broker {self._name()}")
            raise AuthenticationError(f"{error}; the broker enables: {enabled}") from None
        token: bytes | None = mechanism.first()
        use_frames = handshake_version >= 1 and self.versions is not None and self.versions.supports(
            ApiKey.SASL_AUTHENTICATE)
        lifetime_ms = 0
        while token is not None:
            if use_frames:
                reply = self._call_now(ApiKey.SASL_AUTHENTICATE, self.version(ApiKey.SASL_AUTHENTICATE),
                                       {"auth_bytes": token})
                if reply["error_code"]:
                    # OAUTHBEARER's refusal repeats the JSON of its challenge; the mechanism keeps it readable
                    detail = getattr(mechanism, "server_error", None)
                    message = f"the broker refused the token ({detail})" if detail else reply.get("error_message")
                    raise broker_error(reply["error_code"], f"broker {self._name()}, {mechanism.name}",
                                       message or None) from None
                challenge = bytes(reply["auth_bytes"])
                lifetime_ms = int(reply.get("session_lifetime_ms") or 0)
            else:
                # SaslHandshake v0: raw size-prefixed tokens; a refused login closes the socket
                self._write(len(token).to_bytes(4, "big") + token)
                try:
                    challenge = bytes(self._read_frame())
                except ConnectionClosedError:
                    raise AuthenticationError(f"{mechanism.name} authentication with broker {self._name()} "
                                              "failed (connection closed)") from None
            token = mechanism.respond(challenge)
        self._schedule_reauthentication(lifetime_ms)
        log.debug("authenticated to %s with %s", self._name(), mechanism.name)

    def _schedule_reauthentication(self, lifetime_ms: int) -> None:
        if lifetime_ms <= 0:
            self._reauth_at = self._session_ends = None
            return
        now = time.monotonic()
        lifetime = lifetime_ms / 1000
        # as Java's client: at a random 85-95% of the session, so a fleet does not re-authenticate at once
        self._reauth_at = now + lifetime * random.uniform(0.85, 0.95)
        # The broker's session started when it sent its answer, a little before we read it: a request this close
        # to our end of it may reach the broker after its end, and be answered by a closed connection.
        self._session_ends = now + lifetime - min(_SESSION_MARGIN_S, 0.01 * lifetime)

    def _keep_session(self) -> None:
        """Before a request: re-authenticate a session near its end (KIP-368), or reconnect after it ended
        (the broker would close the connection on this request)."""
        if self._reauth_at is None or time.monotonic() < self._reauth_at:
            return
        assert self._session_ends is not None
        # answers to earlier requests come first: the broker served them within the session
        while self._pending:
            self._receive_next()
        if time.monotonic() >= self._session_ends:
            self.close("SASL session expired")
            self.connect()
            return
        try:
            self._authenticate()
        except BaseException:
            # half a SASL exchange leaves the connection unusable
            self.close("re-authentication failed")
            raise
        self.reauthentications += 1

    def version(self, api_key: int) -> int:
        """The negotiated version of `api_key` on this broker."""
        if self.versions is None:
            raise ConnectionClosedError(f"broker {self._name()} is not connected")
        return self.versions.version_for(api_key)

    def supports(self, api_key: int) -> bool:
        """True if this broker and client share a version of `api_key`."""
        return self.versions is not None and self.versions.supports(api_key)

    # ---- requests --------------------------------------------------------------------------

    def _next_correlation(self) -> int:
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        return self._correlation

    def _call_now(self, api_key: int, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
        # used during connect(), before the connection counts as connected
        corr = self._next_correlation()
        self._write(encode_request(api_key, version, corr, self.config.client_id, body))
        frame = self._read_frame()
        got, response = decode_response(api_key, version, frame)
        if got != corr:
            self.close("correlation id mismatch")
            raise ConnectionClosedError(f"broker {self._name()} answered correlation id {got}, expected {corr}")
        return response

    def send(self, api_key: int, body: Mapping[str, Any], version: int | None = None) -> InFlight:
        """Write a request; the returned handle is answered by `receive` (None-response for acks=0)."""
        with self._lock:
            if not self.connected:
                self.connect()
            elif self.config.uses_sasl:
                self._keep_session()
            if version is None:
                version = self.version(api_key)
            wait = self._throttle_until - time.monotonic()
            if wait > 0:
                # the broker asked us to back off (quota); it would mute the channel anyway
                time.sleep(wait)
            corr = self._next_correlation()
            # on a plain socket, a Produce request's batches are written from where they are (one vectored write)
            frame = encode_request(api_key, version, corr, self.config.client_id, body,
                                   gathered=self._ssl_context is None)
            handle = InFlight(api_key, version, corr)
            self._write(frame)
            if expects_response(api_key, body):
                self._pending.append(handle)
            else:
                handle.response = {}
            return handle

    def receive(self, handle: InFlight) -> dict[str, Any]:
        """Block until `handle` is answered; return the decoded body (earlier answers are kept)."""
        with self._lock:
            while not handle.done:
                if not self._pending:
                    raise ConnectionClosedError(f"broker {self._name()}: no request in flight for this handle")
                self._receive_next()
            if handle.error is not None:
                raise handle.error
            assert handle.response is not None
            return handle.response

    def _receive_next(self) -> None:
        # the oldest request in flight gets its answer (Kafka answers in order on a connection)
        frame = self._read_frame()
        head = self._pending.popleft()
        try:
            corr, body = decode_response(head.api_key, head.version, frame)
        except DecodeError as exc:
            self.close(f"undecodable response: {exc}")
            raise
        if corr != head.correlation_id:
            self.close("correlation id mismatch")
            raise ConnectionClosedError(
                f"broker {self._name()} answered correlation id {corr}, expected {head.correlation_id}")
        throttle = body.get("throttle_time_ms") or 0
        if throttle > 0:
            self._throttle_until = max(self._throttle_until, time.monotonic() + throttle / 1000)
        head.frame = frame
        head.response = body

    def request(self, api_key: int, body: Mapping[str, Any], version: int | None = None) -> dict[str, Any]:
        """Send one request and wait for its response."""
        with self._lock:
            return self.receive(self.send(api_key, body, version))

    # ---- socket I/O -----------------------------------------------------------------------

    def _write(self, data: bytes | bytearray) -> None:
        sock = self._sock
        if sock is None:
            raise ConnectionClosedError(f"broker {self._name()} is not connected")
        try:
            if isinstance(data, GatheredFrame) and data.references:
                send_segments(sock, data.segments())
            else:
                sock.sendall(data)
        except TimeoutError:
            self.close("write timed out")
            raise RequestTimeoutError(f"writing to broker {self._name()} timed out") from None
        except OSError as exc:
            self.close(str(exc))
            raise self._io_error(exc, "writing to") from None

    def _recv_into(self, view: memoryview) -> int:
        sock = self._sock
        if sock is None:
            raise ConnectionClosedError(f"broker {self._name()} is not connected")
        try:
            if self._deadline is not None:
                # request.timeout.ms bounds the whole response: a broker dripping bytes must not reset it
                left = self._deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                sock.settimeout(left)
            n = sock.recv_into(view)
        except TimeoutError:
            self.close("request timed out")
            raise RequestTimeoutError(
                f"broker {self._name()} did not answer within request.timeout.ms="
                f"{self.config.request_timeout_ms}") from None
        except OSError as exc:
            self.close(str(exc))
            raise self._io_error(exc, "reading from") from None
        if n == 0:
            self.close("closed by the broker")
            raise ConnectionClosedError(f"broker {self._name()} closed the connection")
        return n

    def _io_error(self, exc: OSError, doing: str) -> KafkaSparkError:
        # a broker refusing our client certificate says so in a TLS alert on the first read (TLS 1.3)
        return certificate_error(exc, self._name(), self.config) or ConnectionClosedError(
            f"{doing} broker {self._name()} failed: {exc}")

    def _fill(self, need: int) -> None:
        # make at least `need` bytes available in the read-ahead buffer
        if self._end - self._start >= need:
            return
        if self._start:
            remaining = self._end - self._start
            self._buf[:remaining] = self._buf[self._start:self._end]
            self._start, self._end = 0, remaining
        while self._end - self._start < need:
            self._end += self._recv_into(self._view[self._end:])

    def _read_frame(self) -> bytes | bytearray:
        self._deadline = time.monotonic() + self.config.request_timeout_ms / 1000
        try:
            return self._read_frame_by_deadline()
        finally:
            self._deadline = None
            if self._sock is not None:
                self._sock.settimeout(self.config.request_timeout_ms / 1000)

    def _read_frame_by_deadline(self) -> bytes | bytearray:
        self._fill(4)
        try:
            size = read_frame_size(self._view[self._start:self._start + 4], self._max_frame)
        except DecodeError as exc:
            self.close(str(exc))
            raise ConnectionClosedError(f"broker {self._name()} sent a bad frame: {exc}") from None
        self._start += 4
        buffered = self._end - self._start
        if size <= buffered:
            frame = bytes(self._view[self._start:self._start + size])
            self._start += size
            return frame
        if size <= len(self._buf) // 2:
            self._fill(size)
            frame = bytes(self._view[self._start:self._start + size])
            self._start += size
            return frame
        if size > self._trusted_frame:
            return self._read_growing(size)
        # big frame: take what is buffered, then receive the rest straight into the frame
        out = bytearray(size)
        out[:buffered] = self._view[self._start:self._end]
        self._start = self._end = 0
        target = memoryview(out)
        pos = buffered
        while pos < size:
            pos += self._recv_into(target[pos:])
        return out

    def _read_growing(self, size: int) -> bytearray:
        # a frame larger than any fetch asked for (a huge Metadata, or a lie): append chunks as they arrive
        out = bytearray(self._view[self._start:self._end])
        self._start = self._end = 0
        while len(out) < size:
            n = self._recv_into(self._view[:min(len(self._buf), size - len(out))])
            out += self._view[:n]
        return out
