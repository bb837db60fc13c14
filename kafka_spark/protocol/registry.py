"""Look up declared APIs and their compiled plans (compiled on first use, then cached)."""

from __future__ import annotations

from functools import cache

from kafka_spark.errors import UnsupportedVersionError
from kafka_spark.protocol.compiler import Plan, compile_struct
from kafka_spark.protocol.schema import Api
from kafka_spark.protocol.schemas import APIS


def get_api(api_key: int) -> Api:
    """The declaration of `api_key`; `UnsupportedVersionError` if this package does not speak it."""
    spec = APIS.get(api_key)
    if spec is None:
        raise UnsupportedVersionError(f"API key {api_key} is not supported by this client")
    return spec


def check_version(spec: Api, version: int) -> None:
    """Raise `UnsupportedVersionError` unless `version` is in the declared range of `spec`."""
    if version not in spec.versions:
        raise UnsupportedVersionError(
            f"{spec.name} version {version} is outside the supported range {spec.versions}"
        )


def is_flexible(api_key: int, version: int) -> bool:
    """True if `version` of `api_key` uses compact types, tagged fields and the flexible headers."""
    return version in get_api(api_key).request.flexible


@cache
def plan(api_key: int, version: int, kind: str) -> Plan:
    """The compiled plan for the request or response body of `api_key` at `version`."""
    spec = get_api(api_key)
    check_version(spec, version)
    message = spec.message(kind)
    return compile_struct(message.fields, version, version in message.flexible)


def precompile() -> int:
    """Compile every declared message at every version now; return how many plans exist."""
    count = 0
    for spec in APIS.values():
        for version in range(spec.versions.lo, spec.versions.hi + 1):
            plan(spec.key, version, "request")
            plan(spec.key, version, "response")
            count += 2
    return count
