"""Options of `format("pykafka-log")`: pykafka's, parsed by the same code, plus where the files are.

A query written for `pykafka` runs unchanged: every pykafka option name is accepted with pykafka's
checks and messages. `kafka.isolation.level` is used; the other `kafka.*` options configure a
network client that reading files does not have, so they are accepted and ignored (logged once).
What would change which rows are read but cannot come from files (a ZooKeeper group's offsets) is
an error.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafka_spark.client.properties import ISOLATION_LEVELS
from kafka_spark.errors import ConfigError
from kafka_spark.spark.redaction import redacted_repr
from kafka_spark.spark.source.direct_write import DIRECT_WRITE_OPTIONS
from kafka_spark.spark.source.options import Mode, SourceOptions, parse_source_options

log = logging.getLogger(__name__)

SOURCE_NAME = "pykafka-log"
# Lower-cased name -> the spelling shown in messages.
_OWN = {k.lower(): k for k in ("path", "skipCorruptBatches", "replicaLogDir", "bytesPerTask")}
# A task reads about this many bytes of `.log` by default (Spark's split size for files): small
# segments are read together, larger ones in index-aligned slices.
DEFAULT_TASK_BYTES = 128 << 20
# Hadoop's keys of an object store (fs.s3a.endpoint, fs.s3a.access.key, ...), as Spark's file sources take them.
_STORE_PREFIX = "fs."
_USED_KAFKA = ("isolation.level",)


@dataclass(frozen=True)
class LogOptions:
    """Validated options of a `pykafka-log` read (plain picklable data).

    `paths` are log dirs or glob patterns (local paths or URIs); `store` holds the `fs.*` options
    for object stores; `replica_dir` is the log dir to read a partition from when several hold it;
    `task_bytes` is about how many bytes of `.log` one task reads.
    """

    source: SourceOptions
    paths: tuple[str, ...]
    isolation: str = "read_uncommitted"
    skip_corrupt: bool = False
    replica_dir: str | None = None
    store: dict[str, str] = field(default_factory=dict)
    task_bytes: int = DEFAULT_TASK_BYTES

    __repr__ = redacted_repr  # `store` holds the store's credentials (fs.s3a.secret.key, ...)


def parse_log_options(options: Mapping[str, str], mode: Mode = "batch") -> LogOptions:
    """Validate `options` (case-insensitive names); raise ConfigError naming the option."""
    opts = {k.lower(): v for k, v in options.items() if v is not None}
    store = {k: v for k, v in options.items() if k.lower().startswith(_STORE_PREFIX) and v is not None}
    kafka_source = {k: v for k, v in options.items() if not k.lower().startswith(_STORE_PREFIX)}
    source = parse_source_options(kafka_source, mode, source=SOURCE_NAME,
                                  own_options=(*_OWN.values(), *DIRECT_WRITE_OPTIONS), brokers_required=False)
    if source.zookeeper_group:
        raise ConfigError("option 'startingOffsetsFromZooKeeperGroup' is not supported by pykafka-log: it reads "
                          "log files, not a cluster's consumer groups; give startingOffsets instead")
    ignored = sorted(k for k in source.kafka if k.lower() not in _USED_KAFKA)
    if ignored:
        log.info("pykafka-log reads files, not brokers: options %s have no effect",
                 ", ".join(f"kafka.{k}" for k in ignored))
    return LogOptions(
        source=source,
        paths=_paths(opts.get("path", "")),
        isolation=_isolation(source.kafka),
        skip_corrupt=_bool(opts, "skipcorruptbatches"),
        replica_dir=(opts.get("replicalogdir") or "").strip() or None,
        store=store,
        task_bytes=_positive(opts, "bytespertask", DEFAULT_TASK_BYTES),
    )


def _paths(text: str) -> tuple[str, ...]:
    paths = tuple(p.strip() for p in text.split(",") if p.strip())
    if not paths:
        raise ConfigError("option 'path' must name one or more Kafka log directories (comma-separated, globs "
                          "allowed), e.g. .load('/var/lib/kafka/data') or .option('path', 's3a://bucket/broker-*')")
    return tuple(p if "://" in p else os.path.abspath(os.path.expanduser(p)) for p in paths)


def _isolation(kafka: Mapping[str, str]) -> str:
    value = next((v for k, v in kafka.items() if k.lower() == "isolation.level"), "read_uncommitted")
    text = value.strip().lower()
    if text not in ISOLATION_LEVELS:
        raise ConfigError(f"kafka.isolation.level must be one of {', '.join(ISOLATION_LEVELS)}; got {value!r}")
    return text


def _positive(opts: Mapping[str, str], name: str, default: int) -> int:
    text = opts.get(name, str(default)).strip()
    if not text.isdigit() or int(text) <= 0:
        raise ConfigError(f"option {_OWN[name]!r} must be a positive integer, got {opts[name]!r}")
    return int(text)


def _bool(opts: Mapping[str, str], name: str) -> bool:
    text = opts.get(name, "false").strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"option {_OWN[name]!r} must be 'true' or 'false', got {opts[name]!r}")
    return text == "true"


__all__ = ["DEFAULT_TASK_BYTES", "SOURCE_NAME", "LogOptions", "parse_log_options"]
