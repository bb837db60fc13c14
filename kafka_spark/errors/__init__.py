"""Error codes and the exception tree."""

from typing import Any

from kafka_spark.errors.base import (
    AuthenticationError,
    CodecUnavailableError,
    ConfigError,
    CorruptRecordError,
    DataLossError,
    DecodeError,
    KafkaConnectionError,
    KafkaSparkError,
    PayloadError,
    SchemaChangedError,
    SchemaRegistryError,
    UnsupportedFormatError,
    UnsupportedVersionError,
)
from kafka_spark.errors.codes import (
    ERROR_CLASSES,
    ERROR_CODES,
    BrokerError,
    ErrorCode,
    RetriableBrokerError,
    UnknownBrokerError,
    error_class,
    error_for_code,
    raise_for_code,
)


def __getattr__(name: str) -> Any:
    # the per-code classes (NotLeaderOrFollowerError, ...) are generated in errors.codes
    from kafka_spark.errors import codes

    if name in codes.CLASS_NAMES:
        return getattr(codes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ERROR_CLASSES",
    "ERROR_CODES",
    "AuthenticationError",
    "BrokerError",
    "CodecUnavailableError",
    "ConfigError",
    "CorruptRecordError",
    "DataLossError",
    "DecodeError",
    "ErrorCode",
    "KafkaConnectionError",
    "KafkaSparkError",
    "PayloadError",
    "RetriableBrokerError",
    "SchemaChangedError",
    "SchemaRegistryError",
    "UnknownBrokerError",
    "UnsupportedFormatError",
    "UnsupportedVersionError",
    "error_class",
    "error_for_code",
    "raise_for_code",
]
