"""The load's and the stream's own settings, over the ones both take (config.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kafka_spark.app.config import COMMON_KEYS
from kafka_spark.app.model import AppConfig
from kafka_spark.app.values import Parser, parse_count, parse_names, parse_positive, parse_text
from kafka_spark.errors import ConfigError
from kafka_spark.sink.options import trigger_kwargs
from kafka_spark.spark.redaction import redacted_repr
from kafka_spark.spark.source.options import duration_ms


@dataclass
class LoadConfig(AppConfig):
    """A batch load's settings: the common ones, a cap on the offsets one run loads, and the log dirs a
    back-fill reads instead of brokers."""

    max_records: int | None = None
    log_dirs: list[str] = field(default_factory=list)

    __repr__ = redacted_repr  # dataclass would write AppConfig's plain one again

    @property
    def embedded(self) -> bool:
        return not self.log_dirs and super().embedded


@dataclass
class StreamConfig(AppConfig):
    """A stream's settings: the common ones, the trigger, per-trigger limits and the checkpoint."""

    trigger: str = "10s"
    checkpoint: str | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay: str | None = None
    sample_rate: int = 50
    metrics_port: int | None = None
    metrics_address: str | None = None
    compact_every: int | None = None
    compact_target_size: int | None = None
    vacuum_retention_hours: int | None = None

    __repr__ = redacted_repr  # dataclass would write AppConfig's plain one again


def parse_trigger(value: Any, name: str) -> str:
    text = parse_text(value, name)
    try:
        trigger_kwargs(text)
    except ConfigError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    return text


def parse_port(value: Any, name: str) -> int:
    port = parse_positive(value, name)
    if port > 65535:
        raise ConfigError(f"{name}: expected a TCP port (1-65535), got {value!r}")
    return port


def parse_delay(value: Any, name: str) -> str:
    text = parse_text(str(value), name)
    duration_ms(text, name)
    return text


_SIZE = re.compile(r"(\d+)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)


def parse_size(value: Any, name: str) -> int:
    """Bytes: a whole number, or one with a unit as Spark reads sizes (128m, 128mb and 128MiB are 128 * 2^20)."""
    match = _SIZE.fullmatch(str(value).strip()) if not isinstance(value, bool) else None
    if match is None:
        raise ConfigError(f"{name}: expected a size in bytes such as 134217728, 128m or 1g, got {value!r}")
    size = int(match.group(1)) * 1024 ** " kmgt".index(match.group(2).lower() or " ")
    if size < 1:
        raise ConfigError(f"{name}: must be at least 1 byte, got {value!r}")
    return size


LOAD_KEYS: dict[str, tuple[str, Parser]] = {**COMMON_KEYS, "max-records": ("max_records", parse_positive),
                                             "log-dirs": ("log_dirs", parse_names)}

STREAM_KEYS: dict[str, tuple[str, Parser]] = {
    **COMMON_KEYS,
    "trigger": ("trigger", parse_trigger),
    "checkpoint": ("checkpoint", parse_text),
    "max-offsets-per-trigger": ("max_offsets_per_trigger", parse_positive),
    "min-offsets-per-trigger": ("min_offsets_per_trigger", parse_positive),
    "max-trigger-delay": ("max_trigger_delay", parse_delay),
    "sample-rate": ("sample_rate", parse_count),
    "metrics-port": ("metrics_port", parse_port),
    "metrics-address": ("metrics_address", parse_text),
    "compact-every": ("compact_every", parse_positive),
    "compact-target-size": ("compact_target_size", parse_size),
    "vacuum-retention-hours": ("vacuum_retention_hours", parse_count),
}


def check_stream(config: StreamConfig) -> StreamConfig:
    """What only a stream's settings can get wrong together."""
    if config.max_trigger_delay is not None and config.min_offsets_per_trigger is None:
        raise ConfigError("--max-trigger-delay only applies with --min-offsets-per-trigger")
    if config.metrics_address is not None and config.metrics_port is None:
        raise ConfigError("--metrics-address only applies with --metrics-port")
    for flag, value in (("--compact-target-size", config.compact_target_size),
                        ("--vacuum-retention-hours", config.vacuum_retention_hours)):
        if value is not None and config.compact_every is None:
            raise ConfigError(f"{flag} only applies with --compact-every (a table's commits between compactions)")
    if config.metrics_port is not None:
        from kafka_spark.app.metrics import require_client

        require_client()  # before Spark starts: a missing extra is a one-line error naming it
    return config
