"""What a Kafka -> table sink is told, in parts by concern, and the `LoadOptions` / `StreamOptions` users build.

Each function of the sink takes the parts it needs: the source it reads (`KafkaSource`), the table and
sink it writes (`SinkTarget`), how a batch becomes rows (`WriteFormat`), how values are parsed and where
those that do not parse go (`ValueParsing`), where committed positions are mirrored (`Publishing`) and
when a stream's micro-batches run (`Pacing`). The two options classes keep every setting under its
public name, in one flat constructor; their properties hand out the parts, built from the current values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_spark.errors import ConfigError
from kafka_spark.sink.change_capture import ChangeCapture, change_capture, check_change_options
from kafka_spark.sink.routing import PLACEHOLDER, Routing
from kafka_spark.sink.table_names import is_table_name
from kafka_spark.spark.redaction import redacted_repr
from kafka_spark.spark.source.options import duration_ms

# The sink's own `schemaEvolutionMode` (any case): each batch decodes with its subject's newest version and the
# table gains that version's columns in the batch's commit (merged). The batch's read runs in `restart` mode, so
# a record newer still (registered while the batch ran) stops the read instead of losing its new fields; the
# commit then runs once more with it (see sink/commits.py `following_schema`).
ADD_NEW_COLUMNS = "addnewcolumns"
EVOLUTION_OPTIONS = ("schemaevolutionmode", "avroschemaevolutionmode")

if TYPE_CHECKING:
    from kafka_spark.sink.results import LoadResult
    from kafka_spark.sink.run_result import MultiLoadResult

Transform = Callable[[Any], Any]  # DataFrame -> DataFrame


@dataclass(frozen=True)
class KafkaSource:
    """What a sink reads: the Kafka client properties, the topics (or a pattern), and where a sink new to
    the table starts (`starting`, or where an old consumer group's offsets in ZooKeeper stand)."""

    kafka: Mapping[str, str]
    topics: Sequence[str] = ()
    pattern: str | None = None
    starting: str | int = "earliest"
    fail_on_data_loss: bool = True
    include_headers: bool = False
    start_zookeeper_group: str | None = None
    # `pykafka` options that decode keys and values (valueFormat, schema.registry.*, ...); read PERMISSIVE so
    # that the sink decides what a bad record does.
    decoding: Mapping[str, str] = field(default_factory=dict)

    __repr__ = redacted_repr

    def client_options(self) -> dict[str, str]:
        """The Kafka client properties as `pykafka` options."""
        return {f"kafka.{k}": v for k, v in self.kafka.items()}

    def read_flags(self) -> dict[str, str]:
        """`failOnDataLoss`, `includeHeaders` and the decoding as `pykafka` options."""
        flags = {"failOnDataLoss": str(self.fail_on_data_loss).lower(),
                 "includeHeaders": str(self.include_headers).lower()}
        return {**flags, **self.decoding, "mode": "PERMISSIVE"} if self.decoding else flags


@dataclass(frozen=True)
class SinkTarget:
    """Where the rows go: the table (a path, a store URI or a catalog name) and the sink's id in it."""

    table: str
    sink_id: str = "default"


@dataclass(frozen=True)
class WriteFormat:
    """How a batch becomes rows: the transform, the partition columns, whether a write may add columns
    (Delta's `mergeSchema`), whether it shows Spark's progress, and the order of an Iceberg table's files' rows."""

    transform: str | Transform | None = None
    partition_by: Sequence[str] = ()
    merge_schema: bool = False
    progress: bool = False
    sort_by: Sequence[str] = ()


@dataclass(frozen=True)
class ValueParsing:
    """Values parsed as JSON with `value_schema` (Spark DDL) into the column `data`; a value that does not
    parse fails the write, or with `dead_letter` (a table beside the table) goes there."""

    value_schema: str | None = None
    dead_letter: str | None = None
    decoded: bool = False
    changes: bool = False  # change events (cdc): a record is bad when its envelope cannot be applied


@dataclass(frozen=True)
class Publishing:
    """Where the committed positions go after each commit: a Kafka consumer group, and the old consumers'
    layout in the ZooKeeper that `kafka`'s `zookeeper.connect` names."""

    kafka: Mapping[str, str]
    group: str | None = None
    zookeeper_group: str | None = None

    __repr__ = redacted_repr


def trigger_kwargs(trigger: str) -> dict[str, Any]:
    """`DataStreamWriter.trigger` arguments for `available-now`, `once` or an interval such as `10s`."""
    text = trigger.strip().lower().replace("_", "-")
    if text in ("available-now", "availablenow"):
        return {"availableNow": True}
    if text == "once":
        return {"once": True}
    try:
        ms = duration_ms(text, "trigger")
    except ConfigError:
        raise ConfigError(f"trigger {trigger!r}: expected 'available-now', 'once' or an interval such as "
                          "'10s', '500ms' or '1m'") from None
    return {"processingTime": f"{ms} milliseconds"}


@dataclass(frozen=True)
class Pacing:
    """When a stream's micro-batches run (`trigger`) and how much each takes (Spark's per-trigger limits),
    with any other `pykafka` source options."""

    trigger: str = "available-now"
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay: str | None = None
    source_options: Mapping[str, str] = field(default_factory=dict)

    __repr__ = redacted_repr

    def reader_options(self) -> dict[str, str]:
        """The per-trigger limits that are set, as `pykafka` options, then `source_options`."""
        limits = {"maxOffsetsPerTrigger": self.max_offsets_per_trigger,
                  "minOffsetsPerTrigger": self.min_offsets_per_trigger, "maxTriggerDelay": self.max_trigger_delay}
        return {**{name: str(value) for name, value in limits.items() if value is not None}, **self.source_options}


@dataclass(frozen=True)
class Compacting:
    """How a stream keeps its tables' files few: each table compacted after every `every` of its commits into
    files of about `target_size` bytes (None: the table's `delta.targetFileSize`, else 100 MiB), in a commit that
    changes no data, then (with `vacuum_retention_hours`) the files removed longer ago than that deleted."""

    every: int | None = None
    target_size: int | None = None
    vacuum_retention_hours: int | None = None

    def __post_init__(self) -> None:
        _whole("compact_every", self.every, 1, "micro-batches")
        _whole("compact_target_size", self.target_size, 1, "bytes")
        _whole("vacuum_retention_hours", self.vacuum_retention_hours, 0, "hours")
        if self.every is None:
            given = [n for n, v in (("compact_target_size", self.target_size),
                                    ("vacuum_retention_hours", self.vacuum_retention_hours)) if v is not None]
            if given:
                raise ConfigError(f"{given[0]} only applies with compact_every (how many of a table's commits "
                                  "between its compactions)")


def _whole(name: str, value: Any, least: int, unit: str) -> None:
    """ConfigError unless `value` is None or a whole number of `unit` of at least `least`."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name}: expected a whole number of {unit}, got {value!r}")
    if value < least:
        raise ConfigError(f"{name}: must be {'0 or more' if least == 0 else f'at least {least}'}, got {value}")


@dataclass
class LoadOptions:
    """What to load where. `kafka` holds client properties (`bootstrap.servers`, security, ...).

    `merge_schema` lets a write add the columns a transform introduces (Delta's `mergeSchema`).
    `sort_by` (Iceberg tables): the table's sort order, `["key", "timestamp desc"]`; see iceberg/sort_orders.py.
    `start_zookeeper_group`: a sink new to the table starts where this old consumer group's offsets in
    ZooKeeper stand (`starting` for partitions it has none of); `publish_zookeeper_group`: after each
    commit, the positions go there too, as old consumers wrote them. Both need `zookeeper.connect` in `kafka`.
    `value_schema` (Spark DDL) parses each value as JSON into the column `data`; a value that does not parse
    fails the write, or with `dead_letter` (a table beside it) goes there and the rest loads (see dead_letters.py).
    `value_format` / `key_format` (`avro`, `protobuf`, `json-schema`) decode values / keys with the schema
    registry `schema_registry` names (`{"url": ..., "basic.auth.user.info": ...}`, the `schema.registry.`
    prefix optional) into the `value` / `key` column; `format_options` are further `pykafka` decoding options
    (`valueSubject`, `valueSchemaVersion`, `schemaEvolutionMode`, ...). A record that does not decode is
    handled as one that does not parse.

    `routing` loads many topics into one table each, instead of all into `table` (give one of the two);
    the settings above are then every table's defaults, which the routing's overrides replace per topic
    (see routing.py). Each table is its own sink, with `sink_id` as its id.

    `writer`: "auto" (the default: the direct writer where it can serve the table, else Spark's, with the
    reason in the result), "spark" (Spark's Parquet writer and Delta on Spark) or "direct" (each task writes
    its rows as Parquet and the driver commits them through delta-rs; refused when the table needs Spark's
    writer);
    see delta/writer_choice.py. Batch loads and streams alike: a stream chooses when it starts (`start_stream` refuses
    "direct" there), and a directly written micro-batch reads its own offsets from Kafka in the write
    instead of the query's DataFrame (see stream.py).

    `cdc` ("debezium" or "upsert"), with `key_columns`, `cdc_metadata`, `cdc_soft_delete` and `cdc_history`: the
    topics are change streams, applied to the table as upserts and deletes instead of appended, every change also
    appended to the history table (see change_capture.py).

    `log_dirs` (a batch load only): read the records from Kafka log directories, as `format("pykafka-log")`'s
    `path` takes them (a path, a URI, a glob, or several), instead of from brokers; `kafka` then needs no
    brokers (its `isolation.level` still applies). The batch runs from the table's committed offsets (else
    `starting`) to the end of the files, with the same commit, so a load from brokers continues it (see
    log_load.py).
    """

    table: str | None = None
    kafka: dict[str, str] = field(default_factory=dict)
    topics: Sequence[str] = ()
    pattern: str | None = None
    sink_id: str = "default"
    starting: str | int = "earliest"
    max_records: int | None = None
    fail_on_data_loss: bool = True
    partition_by: Sequence[str] = ()
    sort_by: Sequence[str] = ()
    transform: str | Transform | None = None
    include_headers: bool = False
    publish_group: str | None = None
    start_zookeeper_group: str | None = None
    publish_zookeeper_group: str | None = None
    progress: bool = False
    merge_schema: bool = False
    value_schema: str | None = None
    dead_letter: str | None = None
    value_format: str | None = None
    key_format: str | None = None
    schema_registry: dict[str, str] = field(default_factory=dict, repr=False)  # may hold credentials
    format_options: dict[str, str] = field(default_factory=dict)
    routing: Routing | None = None
    writer: str = "auto"
    log_dirs: str | Sequence[str] | None = None
    cdc: str | None = None
    key_columns: Sequence[str] = ()
    cdc_metadata: bool = False
    cdc_soft_delete: bool = False
    cdc_history: str | None = None

    # Client properties and registry settings hold passwords: a notebook cell or a log line shows this repr.
    __repr__ = redacted_repr

    def __post_init__(self) -> None:
        if self.table is not None and self.routing is not None:
            raise ConfigError("give a table or a routing of topics to tables, not both")
        if self.log_dirs is not None and self.routing is not None:
            raise ConfigError("log_dirs loads one table: give `table` instead of a routing")
        if self.table is None and self.routing is None:
            raise ConfigError("give the table to load into, or a routing of topics to tables")
        check_change_options(self.changes, transform=self.transform)
        if self.changes is not None and self.log_dirs is not None:
            raise ConfigError("cdc: log_dirs back-fills appended records; load change streams from brokers")

    @property
    def source(self) -> KafkaSource:
        return KafkaSource(self.kafka, self.topics, self.pattern, self.starting, self.fail_on_data_loss,
                           self.include_headers, self.start_zookeeper_group, self.decoding)

    @property
    def decoding(self) -> dict[str, str]:
        """The `pykafka` options that decode keys and values; empty when both stay bytes."""
        given = {"valueFormat": self.value_format, "keyFormat": self.key_format}
        formats = {k: v for k, v in given.items() if v and v.strip().lower() != "binary"}
        if not formats:
            return {}
        registry = {k if k.lower().startswith("schema.registry.") else f"schema.registry.{k}": v
                    for k, v in self.schema_registry.items()}
        given_options = {k: "restart" if self.evolving and k.lower() in EVOLUTION_OPTIONS else v
                         for k, v in self.format_options.items()}
        return {**given_options, **registry, **formats}

    @property
    def evolving(self) -> bool:
        """Whether the tables follow their subjects' newer versions (`schemaEvolutionMode=addNewColumns`)."""
        decodes = any(f and f.strip().lower() != "binary" for f in (self.value_format, self.key_format))
        modes = [str(v).strip().lower() for k, v in self.format_options.items() if k.lower() in EVOLUTION_OPTIONS]
        return decodes and ADD_NEW_COLUMNS in modes

    @property
    def target(self) -> SinkTarget:
        if self.table is None:
            raise ConfigError("routed options have one target per table: see kafka_spark.sink.routed")
        return SinkTarget(self.table, self.sink_id)

    @property
    def format(self) -> WriteFormat:
        return WriteFormat(self.transform, self.partition_by, self.merge_schema or self.evolving, self.progress,
                           self.sort_by)

    @property
    def parsing(self) -> ValueParsing:
        return ValueParsing(self.value_schema, self.dead_letter, bool(self.decoding), self.changes is not None)

    @property
    def changes(self) -> ChangeCapture | None:
        """How the records change the table (None: they are appended)."""
        return change_capture(self.cdc, self.key_columns, self.cdc_metadata, self.cdc_soft_delete, self.cdc_history)

    @property
    def publishing(self) -> Publishing:
        return Publishing(self.kafka, self.publish_group, self.publish_zookeeper_group)


@dataclass
class StreamOptions(LoadOptions):
    """A Kafka -> table stream: `LoadOptions` plus the query's checkpoint, trigger and per-trigger limits.

    `trigger` is `available-now`, `once`, or a processing-time interval (`10s`, `500ms`, `1m`).
    `checkpoint` defaults to `<table>/_kafka_spark/checkpoints/<sink id>` (VACUUM leaves `_` paths alone);
    for a catalog table, `start_stream` sets it from the table's location.
    `on_commit(batch_id, result)` is called on the driver after each micro-batch's commit;
    with `routing`, `on_trigger(batch_id, results)` after each micro-batch's commits, one per table.
    A routed stream's checkpoint defaults to `<template's parent>/_kafka_spark/checkpoints/<sink id>` for
    a path template whose last part holds `{topic}`, and must be given otherwise.
    `compact_every=N` compacts each table after every N of its commits, between micro-batches, into files of
    about `compact_target_size` bytes; `vacuum_retention_hours` then deletes the files removed longer ago than
    that (see `Compacting`, and delta/compaction.py).
    """

    checkpoint: str | None = None
    trigger: str = "available-now"
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay: str | None = None
    source_options: dict[str, str] = field(default_factory=dict)
    on_commit: Callable[[int, LoadResult], None] | None = None
    on_trigger: Callable[[int, MultiLoadResult], None] | None = None
    compact_every: int | None = None
    compact_target_size: int | None = None
    vacuum_retention_hours: int | None = None

    __repr__ = redacted_repr  # dataclass would write LoadOptions' plain one again

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.log_dirs is not None:
            raise ConfigError("log_dirs back-fills a table in batch loads (load); a stream reads brokers")
        _ = self.compacting  # checked now, not at the first compaction

    @property
    def compacting(self) -> Compacting:
        return Compacting(self.compact_every, self.compact_target_size, self.vacuum_retention_hours)

    @property
    def pacing(self) -> Pacing:
        return Pacing(self.trigger, self.max_offsets_per_trigger, self.min_offsets_per_trigger,
                      self.max_trigger_delay, self.source_options)

    @property
    def checkpoint_location(self) -> str:
        if self.checkpoint:
            return self.checkpoint
        if self.routing is not None:
            return routed_checkpoint(self.routing, self.sink_id)
        assert self.table is not None  # __post_init__
        if is_table_name(self.table):
            raise ConfigError(f"the checkpoint of catalog table {self.table} goes beside the table's location, "
                              "known once start_stream has found it; or give `checkpoint`")
        return default_checkpoint(self.table, self.sink_id)


def default_checkpoint(location: str, sink_id: str) -> str:
    """The query's checkpoint beside the table (VACUUM leaves `_` paths alone)."""
    return f"{location.rstrip('/')}/_kafka_spark/checkpoints/{sink_id}"


def routed_checkpoint(routing: Routing, sink_id: str) -> str:
    """A routed stream's default checkpoint: beside the tables of a path template (`/lake/bronze/{topic}`)."""
    template = routing.template
    if template is None or is_table_name(template.replace(PLACEHOLDER, "t")):
        raise ConfigError("a stream routed by a map of tables or to catalog tables needs `checkpoint`")
    parent, _, last = template.rstrip("/").rpartition("/")
    if PLACEHOLDER in parent or PLACEHOLDER not in last or not parent:
        raise ConfigError(f"table template {template!r}: {PLACEHOLDER} is not in its last part, so the stream's "
                          "checkpoint has no place beside the tables; give `checkpoint`")
    return default_checkpoint(parent, sink_id)
