"""The exception tree every layer raises; callers catch `KafkaSparkError` or a narrower class."""

from __future__ import annotations


class KafkaSparkError(Exception):
    """Root of every error this package raises on purpose."""


class ConfigError(KafkaSparkError, ValueError):
    """An option or configuration value is missing, unknown or invalid."""


class DecodeError(KafkaSparkError):
    """Bytes that do not follow the Kafka wire or storage format."""


class CorruptRecordError(DecodeError):
    """A record batch or message failed its CRC or structural checks.

    `offset` is the base offset of the batch (or the message offset) when known; `position` is the
    byte position of the entry in the scanned buffer when the framing itself is broken.
    """

    def __init__(self, message: str, offset: int | None = None, position: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset
        self.position = position


class PayloadError(DecodeError):
    """A key or value that does not decode with its registered schema (framing, unknown id, corrupt or
    truncated payload, a schema the query cannot read); the message names the reason."""


class SchemaRegistryError(KafkaSparkError):
    """The schema registry refused or failed a request; `error_code` is its JSON error code when it sent one
    (40401 subject not found, 40403 schema not found, 409 incompatible, ...), `status` the HTTP status."""

    def __init__(self, message: str, status: int | None = None, error_code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code


class SchemaChangedError(KafkaSparkError):
    """A record was written with a newer version of the query's subject while `schemaEvolutionMode` is
    `restart`: the query stops so that a restart reads with the new schema."""


class CodecUnavailableError(KafkaSparkError):
    """A compression codec is needed but its library is not installed."""


class UnsupportedFormatError(DecodeError):
    """A record format, magic byte or compression id this package does not know."""


class KafkaConnectionError(KafkaSparkError):
    """A network failure talking to a broker (connect, read, write or timeout)."""


class AuthenticationError(KafkaSparkError):
    """TLS or SASL authentication with a broker failed."""


class UnsupportedVersionError(KafkaSparkError):
    """No API version is supported by both this client and the broker."""


class DataLossError(KafkaSparkError):
    """Requested records no longer exist on the broker (retention, truncation)."""
