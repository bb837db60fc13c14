"""Version negotiation: what this client speaks, what a broker serves, and the pick per API.

Brokers from 0.10 on answer ApiVersions; for older brokers the caller configures the broker
release and `BrokerVersions.for_legacy_broker` supplies the ranges that release served.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kafka_spark.errors import DecodeError, UnsupportedVersionError, raise_for_code
from kafka_spark.protocol.codec import decode_response, encode_request
from kafka_spark.protocol.primitives import INT16
from kafka_spark.protocol.registry import get_api
from kafka_spark.protocol.schemas import APIS

API_VERSIONS_KEY = 18
UNSUPPORTED_VERSION_CODE = 35
CLIENT_SOFTWARE_NAME = "kafka-spark"
_KIP511_INVALID = re.compile(r"[^a-zA-Z0-9.-]")

# API ranges of brokers that predate ApiVersions (key: (min, max)), by release
LEGACY_BROKER_VERSIONS: dict[str, dict[int, tuple[int, int]]] = {
    "0.8.0": {0: (0, 0), 1: (0, 0), 2: (0, 0), 3: (0, 0)},
    # offset commit/fetch (stored in ZooKeeper)
    "0.8.1": {0: (0, 0), 1: (0, 0), 2: (0, 0), 3: (0, 0), 8: (0, 0), 9: (0, 0)},
    # offsets in Kafka and the group coordinator lookup
    "0.8.2": {0: (0, 0), 1: (0, 0), 2: (0, 0), 3: (0, 0), 8: (0, 1), 9: (0, 1), 10: (0, 0)},
    # group membership: join, sync, heartbeat, leave, describe, list
    "0.9.0": {
        0: (0, 1), 1: (0, 1), 2: (0, 0), 3: (0, 0), 8: (0, 2), 9: (0, 1), 10: (0, 0),
        11: (0, 0), 12: (0, 0), 13: (0, 0), 14: (0, 0), 15: (0, 0), 16: (0, 0),
    },
}


def supported_versions(api_key: int) -> tuple[int, int]:
    """The (min, max) versions of `api_key` this package can encode and decode."""
    spec = get_api(api_key)
    return spec.versions.lo, spec.versions.hi


def pick_version(api_key: int, broker_min: int, broker_max: int) -> int:
    """The highest version both sides support; `UnsupportedVersionError` if the ranges do not meet."""
    lo, hi = supported_versions(api_key)
    best = min(hi, broker_max)
    if best < max(lo, broker_min):
        raise UnsupportedVersionError(
            f"{get_api(api_key).name}: broker serves {broker_min}-{broker_max}, this client {lo}-{hi}"
        )
    return best


class BrokerVersions:
    """The API version ranges one broker serves, and the version to use for each API."""

    def __init__(self, ranges: Mapping[int, tuple[int, int]], source: str = "ApiVersions") -> None:
        self.ranges: dict[int, tuple[int, int]] = dict(ranges)
        self.source = source

    @classmethod
    def from_response(cls, body: Mapping[str, Any]) -> BrokerVersions:
        """From a decoded ApiVersions response body (raises its error code as a broker error)."""
        raise_for_code(body.get("error_code", 0), "ApiVersions")
        return cls({k["api_key"]: (k["min_version"], k["max_version"]) for k in body.get("api_keys", ())})

    @classmethod
    def for_legacy_broker(cls, broker_version: str) -> BrokerVersions:
        """The ranges of a pre-0.10 broker release such as ``"0.9.0"`` or ``"0.8.2"``."""
        key = ".".join([*broker_version.split("."), "0", "0"][:3])
        if key not in LEGACY_BROKER_VERSIONS:
            raise UnsupportedVersionError(
                f"no fallback versions for broker {broker_version!r}; known: {sorted(LEGACY_BROKER_VERSIONS)}"
            )
        return cls(LEGACY_BROKER_VERSIONS[key], source=f"configured broker {key}")

    def supports(self, api_key: int) -> bool:
        """True if the broker and this client share a version of `api_key`."""
        try:
            self.version_for(api_key)
        except UnsupportedVersionError:
            return False
        return True

    def version_for(self, api_key: int) -> int:
        """The version to send for `api_key` to this broker."""
        if api_key not in self.ranges:
            raise UnsupportedVersionError(f"broker ({self.source}) does not serve API key {api_key}")
        broker_min, broker_max = self.ranges[api_key]
        return pick_version(api_key, broker_min, broker_max)

    def negotiated(self) -> dict[int, int]:
        """Every API this client speaks that the broker serves, mapped to the version to use."""
        return {key: self.version_for(key) for key in APIS if self.supports(key)}

    def __repr__(self) -> str:
        return f"BrokerVersions({len(self.ranges)} APIs, source={self.source!r})"


def kip511_safe(text: str) -> str:
    """`text` made acceptable as a KIP-511 client software name/version.

    Brokers reject the whole ApiVersions request (INVALID_REQUEST) unless the value matches
    ``[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?``; local builds such as "0.1.0+local" do not.
    """
    cleaned = _KIP511_INVALID.sub("-", text).strip("-.")
    return cleaned or "unknown"


def api_versions_request(
    correlation_id: int,
    client_id: str | None,
    version: int | None = None,
    software_version: str | None = None,
) -> bytearray:
    """An ApiVersions request frame; the highest version this client knows unless told otherwise."""
    if version is None:
        version = supported_versions(API_VERSIONS_KEY)[1]
    if software_version is None:
        from kafka_spark import __version__

        software_version = __version__
    body = {"client_software_name": kip511_safe(CLIENT_SOFTWARE_NAME),
            "client_software_version": kip511_safe(software_version)}
    return encode_request(API_VERSIONS_KEY, version, correlation_id, client_id, body)


def parse_api_versions_response(frame: Any, version: int) -> tuple[int, dict[str, Any]]:
    """Decode an ApiVersions response sent for a request of `version`.

    A broker that does not know `version` answers UNSUPPORTED_VERSION with a v0 body listing its
    ranges, so the caller can retry with ``pick_version(18, ...)``; that body is returned as is.
    """
    view = memoryview(frame)
    if version > 0 and len(view) >= 6 and INT16.unpack_from(view, 4)[0] == UNSUPPORTED_VERSION_CODE:
        try:
            return decode_response(API_VERSIONS_KEY, 0, view)
        except DecodeError:
            pass
    return decode_response(API_VERSIONS_KEY, version, view)
