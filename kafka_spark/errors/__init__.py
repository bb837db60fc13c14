"""Error codes and the exception tree."""

from kafka_spark.errors.base import (
    AuthenticationError,
    CodecUnavailableError,
    ConfigError,
    CorruptRecordError,
    DataLossError,
    DecodeError,
    KafkaConnectionError,
    KafkaSparkError,
    UnsupportedFormatError,
    UnsupportedVersionError,
)

__all__ = [
    "AuthenticationError",
    "CodecUnavailableError",
    "ConfigError",
    "CorruptRecordError",
    "DataLossError",
    "DecodeError",
    "KafkaConnectionError",
    "KafkaSparkError",
    "UnsupportedFormatError",
    "UnsupportedVersionError",
]
