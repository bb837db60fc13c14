"""Which writer serves a table: Spark's (rows through Spark's Parquet writer and Delta on Spark) or the direct one.

The direct writer (sink/parquet/files.py for the tasks, direct_commit.py for the commit) writes a batch's rows as
Parquet in the tasks that read them and commits the files, the `txn` and the batch's JSON through
delta-rs: no record crosses into the JVM. It serves what it can write exactly as Delta on Spark would: raw,
registry-decoded or `value_schema`-parsed records appended to a path table (or a new one), or to an existing
table of the session catalog when that is Delta's own (`catalog_reason`), whose protocol asks nothing of a
writer beyond the files, their statistics and the commit, partitioned (by `partition_by` or the table's own
partitioning) by top-level columns of the rows or not at all. Everything else gets Spark's writer:
`direct_writer_reason` says why, in one place.

A batch can still go to Spark's writer when it is written: one whose JSON values the tasks cannot be sure
to parse as Spark's `from_json` does, or that has records for the dead-letter table (direct_commit.py).

`LoadOptions.writer`: "auto" (the default: the direct writer where it can serve the table, else Spark's, the
reason reported in the result and the log), "direct" (refused with the reason when the table needs Spark's
writer) or "spark".
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_spark.errors import ConfigError
from kafka_spark.sink.parquet.files import PARQUET_CODECS
from kafka_spark.sink.parquet.partition_values import PARTITION_KINDS, time_zone
from kafka_spark.sink.table_names import is_table_name, name_parts
from kafka_spark.spark.versions import require_delta_spark

if TYPE_CHECKING:
    from deltalake import DeltaTable

    from kafka_spark.delta.location import TableLocation
    from kafka_spark.sink.options import KafkaSource, LoadOptions

log = logging.getLogger(__name__)

WRITERS = ("auto", "spark", "direct")
# Why a load that creates a catalog table takes Spark's writer (which registers it); later ones may be direct.
# Why a change stream's catalog table takes Spark's MERGE: delta-rs's (the direct writer's) serves path tables.
CHANGE_CAPTURE = ("cdc into a catalog table applies changes with Delta's MERGE on Spark (delta-rs's MERGE, the "
                  "direct writer's, serves tables given by path)")
NEW_CATALOG_TABLE = "a new catalog table is created by Spark's writer (the direct writer serves its later commits)"
# The session catalog whose Delta tables the direct writer serves by name: Delta's own, over Spark's metastore.
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
# Writer features the direct commit honours by writing files alone (appendOnly: it only appends;
# changeDataFeed: an append has no change files; deletionVectors: new files have none), and those it
# honours while their content asks nothing (checked below: a CHECK constraint, a generated column, a
# column-mapping mode, an invariant).
_PLAIN_FEATURES = {"appendOnly", "changeDataFeed", "deletionVectors", "timestampNtz"}
_CHECKED_FEATURES = {"invariants", "checkConstraints", "generatedColumns", "columnMapping"}
# What the sink writes whatever the source: the Kafka columns a NOT NULL constraint cannot fail on.
_NEVER_NULL = {"topic", "partition", "offset", "timestamp", "timestampType"}
DEFAULTS_PREFIX = "spark.databricks.delta.properties.defaults."


@dataclass(frozen=True)
class DirectTarget:
    """What the direct writer commits against: the table's snapshot (None: not created yet), its location, the
    table's Delta schema (JSON), its partition columns and the session time zone (a timestamp partition's
    directory is named in it)."""

    location: TableLocation
    table: DeltaTable | None
    schema_json: str
    partition_columns: tuple[str, ...] = ()
    time_zone: str = "UTC"
    compression: str = "snappy"
    value_schema: str | None = None  # the struct `value_schema` parses values into (Spark's JSON form)


@dataclass(frozen=True)
class WriterChoice:
    """The writer that serves a load ('spark' or 'direct'); `reason` says why Spark's serves one that asked
    for 'auto'; `target` is set for the direct writer."""

    writer: str
    reason: str | None = None
    target: DirectTarget | None = None


def choose_writer(spark: Any, options: LoadOptions, location: TableLocation | None) -> WriterChoice:
    """The writer for this load of `options.table` (at `location`, None for a catalog table not created yet)."""
    wanted = (getattr(options, "writer", "auto") or "auto").strip().lower()
    if wanted not in WRITERS:
        raise ConfigError(f"writer {options.writer!r}: expected one of {', '.join(WRITERS)}")
    if wanted == "spark":
        require_delta_spark(f"{options.table}: writer 'spark' (Spark's Delta writer)", spark)
        return WriterChoice("spark")
    if getattr(options, "changes", None) is not None:
        # A MERGE has no files of its own to write in the read's tasks: the direct choice has no target, and
        # merge_commit.py applies the batch's changes through delta-rs.
        if options.table is not None and not is_table_name(options.table):
            return WriterChoice("direct")
        if wanted == "direct":
            raise ConfigError(f"writer 'direct' cannot write to {options.table}: {CHANGE_CAPTURE}; use writer "
                              "'spark' or 'auto'")
        require_delta_spark(f"{options.table}: change data capture ({CHANGE_CAPTURE})", spark)
        return WriterChoice("spark", reason=CHANGE_CAPTURE)
    if location is None and options.table is not None and not is_table_name(options.table):
        from kafka_spark.delta.location import locate

        location = locate(options.table, spark)
    table = _snapshot(location) if location is not None else None
    parsed = parsed_struct(spark, options.value_schema) if options.value_schema else None
    rows = rows_schema(options.source, parsed) if options.transform is None else None
    zone, codec = session_time_zone(spark), session_codec(spark)
    reason = direct_writer_reason(table, options, rows, session_defaults(spark), zone, parsed)
    if reason is None and options.table is not None and is_table_name(options.table):
        reason = catalog_reason(spark, options.table)
    if reason is None and codec not in PARQUET_CODECS:
        reason = (f"spark.sql.parquet.compression.codec is {codec} (the direct writer writes "
                  f"{', '.join(PARQUET_CODECS)})")
    if reason is None:
        assert location is not None and rows is not None  # a catalog name or SQL rows give a reason
        schema = table.schema().to_json() if table is not None else rows
        columns = table.metadata().partition_columns if table is not None else options.partition_by
        return WriterChoice("direct", target=DirectTarget(location, table, schema, tuple(columns or ()), zone,
                                                          codec, parsed))
    if wanted == "direct":
        raise ConfigError(f"writer 'direct' cannot write to {options.table}: {reason}; use writer 'spark' or 'auto'")
    require_delta_spark(f"{options.table}: Spark's Delta writer (the direct writer cannot serve it: {reason})", spark)
    log.info("%s: Spark's writer, since %s", options.table, reason)
    return WriterChoice("spark", reason=reason)


def catalog_reason(spark: Any, name: str) -> str | None:
    """Why the direct writer leaves the existing catalog table `name` to Spark's writer, or None: it serves the
    Delta tables of the session catalog when that is Delta's own catalog (the table's files and log are then
    all there is to a write), not other catalogs, which may hold more or vend the storage credentials."""
    parts = name_parts(name)
    if len(parts) == 3 and parts[0].lower() != "spark_catalog":
        return f"the table is in catalog {parts[0]} (the direct writer serves the session catalog's Delta tables)"
    implementation = spark.conf.get("spark.sql.catalog.spark_catalog", None) if spark is not None else None
    if implementation != DELTA_CATALOG:
        shown = implementation or "Spark's built-in one"
        return (f"the session catalog is {shown}, not Delta's {DELTA_CATALOG} (the direct writer serves that "
                "one's tables by name)")
    return None


def parsed_struct(spark: Any, ddl: str) -> str:
    """The struct `value_schema` parses values into, in Spark's JSON form (as `from_json` gives it: nullable)."""
    from kafka_spark.sink.value_schema import value_struct

    return nullable_schema(value_struct(spark, ddl).json())


def direct_writer_reason(table: DeltaTable | None, options: LoadOptions, rows_schema_json: str | None = None,
                         defaults: Mapping[str, str] | None = None, session_zone: str = "UTC",
                         parsed: str | None = None) -> str | None:
    """Why the direct writer cannot serve `options`' table, or None when it can.

    `table` is the table's snapshot as delta-rs reads it (None: no table yet); `rows_schema_json` the Delta
    schema (JSON, all nullable) of the rows a load writes; `defaults` the session's Delta table-property
    defaults (`spark.databricks.delta.properties.defaults.*`), which a table created by Delta on Spark gets;
    `session_zone` the session time zone, which names a timestamp partition's directory; `parsed` the struct
    `value_schema` parses values into (Spark's JSON form).
    """
    if options.table is None:
        return "the table is not known yet"
    if is_table_name(options.table) and table is None:
        return NEW_CATALOG_TABLE
    if options.transform is not None:
        return "a transform makes the rows in Spark SQL"
    if options.value_schema is not None:
        from kafka_spark.formats.spark_json.parser import certain_schema_reason

        if parsed is None:
            return "value_schema is parsed by Spark's from_json"
        found = certain_schema_reason(parsed)
        if found:
            return f"value_schema is parsed by Spark's from_json, since {found}"
    wanted = list(options.partition_by or ())
    if table is None:
        if defaults:
            return f"a new table gets the session's Delta defaults ({', '.join(sorted(defaults))})"
        if wanted and rows_schema_json is not None:
            return _partition_reason(rows_schema_json, wanted, session_zone)
        return None
    existing = list(table.metadata().partition_columns)
    if wanted and wanted != existing:
        return (f"partition_by ({', '.join(wanted)}) differs from the table's partitioning "
                f"({', '.join(existing) or 'none'})")
    return _table_reason(table, rows_schema_json) or _partition_reason(table.schema().to_json(), existing,
                                                                       session_zone)


def _partition_reason(schema_json: str, columns: list[str], session_zone: str) -> str | None:
    """Why the direct writer cannot partition rows of this schema by `columns` (exact top-level names)."""
    if not columns:
        return None
    fields = {f["name"]: f["type"] for f in json.loads(schema_json)["fields"]}
    for name in columns:
        if name not in fields:
            if "." in name and name.split(".")[0] in fields:
                return f"partition column {name} is a nested field (tables are partitioned by top-level columns)"
            return f"partition column {name} is not a column of the rows (Spark's writer resolves other spellings)"
        kind = fields[name]
        if not (isinstance(kind, str) and (kind in PARTITION_KINDS or kind.startswith("decimal"))):
            shown = kind if isinstance(kind, str) else kind.get("type")
            return f"partition column {name} is of type {shown}, not an atomic type"
        if kind == "timestamp" and time_zone(session_zone) is None:
            return f"partition column {name} is a timestamp and the session time zone {session_zone!r} is unknown here"
    if len(set(columns)) != len(columns):
        return f"partition_by names a column twice ({', '.join(columns)})"
    if len(columns) == len(fields):
        return "partition_by names every column (Delta keeps at least one in the files)"
    return None


def _table_reason(table: DeltaTable, rows_schema_json: str | None) -> str | None:
    metadata, protocol = table.metadata(), table.protocol()
    writer = set(protocol.writer_features or [])
    reader = set(protocol.reader_features or [])
    unsupported = sorted((writer - _PLAIN_FEATURES - _CHECKED_FEATURES)
                         | (reader - _PLAIN_FEATURES - {"columnMapping"}))
    if unsupported:
        return f"the table uses the feature(s) {', '.join(unsupported)}"
    if protocol.min_writer_version > 7 or protocol.min_reader_version > 3:
        return f"protocol {protocol.min_reader_version}/{protocol.min_writer_version} is newer than the direct writer"
    config = metadata.configuration
    if (config.get("delta.columnMapping.mode") or "none").lower() != "none":
        return "the table uses column mapping"
    constraints = sorted(k.removeprefix("delta.constraints.") for k in config if k.startswith("delta.constraints."))
    if constraints:
        return f"the table has CHECK constraint(s) {', '.join(constraints)}"
    schema = json.loads(table.schema().to_json())
    found = _column_reason(schema["fields"], ())
    if found:
        return found
    if rows_schema_json is not None and _shape(schema) != _shape(json.loads(rows_schema_json)):
        return "the table's columns differ from the rows' (Spark's writer checks or merges schemas)"
    return None


def _column_reason(fields: list[dict[str, Any]], prefix: tuple[str, ...]) -> str | None:
    for f in fields:
        name = ".".join((*prefix, f["name"]))
        meta = f.get("metadata") or {}
        if "delta.generationExpression" in meta:
            return f"column {name} is generated"
        if any(k.startswith("delta.identity.") for k in meta):
            return f"column {name} is an identity column"
        if "delta.invariants" in meta:
            return f"column {name} has an invariant"
        if not f.get("nullable", True) and not (not prefix and f["name"] in _NEVER_NULL):
            return f"column {name} is NOT NULL"
        kind = f["type"]
        if isinstance(kind, dict) and kind.get("type") == "struct":
            found = _column_reason(kind["fields"], (*prefix, f["name"]))
            if found:
                return found
    return None


def _shape(node: Any) -> Any:
    """A Delta schema's names and types alone: nullability and metadata (comments) do not change the files."""
    if isinstance(node, dict):
        return {k: _shape(v) for k, v in node.items()
                if k not in ("nullable", "metadata", "containsNull", "valueContainsNull")}
    if isinstance(node, list):
        return [_shape(v) for v in node]
    return node


def nullable_schema(schema_json: str) -> str:
    """A Delta schema with every field, element and value nullable, as Delta on Spark creates a table from a
    DataFrame."""
    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items()}
            for key in ("nullable", "containsNull", "valueContainsNull"):
                if key in out:
                    out[key] = True
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return json.dumps(walk(json.loads(schema_json)), separators=(",", ":"))


def rows_schema(source: KafkaSource, parsed: str | None = None) -> str:
    """The Delta schema (JSON, nullable) of the rows a raw or decoding read of `source` writes, with the column
    `data` of the struct `parsed` (Spark's JSON form) when `value_schema` parses values."""
    import pyarrow as pa
    from deltalake import Schema

    from kafka_spark.records import kafka_schema

    schema = kafka_schema(source.include_headers)
    if source.decoding:
        from kafka_spark.formats.columns import decoded_types
        from kafka_spark.formats.options import payload_options
        from kafka_spark.formats.plan import plan_payloads

        payloads = payload_options(source.read_flags())
        assert payloads is not None
        types = decoded_types(plan_payloads(payloads, tuple(source.topics)))
        schema = pa.schema([pa.field(f.name, types.get(f.name, f.type)) for f in schema])
    rows = json.loads(Schema.from_arrow(schema).to_json())
    if parsed is not None:
        rows["fields"].append({"name": "data", "type": json.loads(parsed), "nullable": True, "metadata": {}})
    return nullable_schema(json.dumps(rows))


def session_defaults(spark: Any) -> dict[str, str]:
    """The session's Delta table-property defaults (`spark.databricks.delta.properties.defaults.*`)."""
    if spark is None:
        return {}
    try:
        conf = spark.conf.getAll
    except AttributeError:  # PySpark without RuntimeConfig.getAll
        return {}
    return {k: v for k, v in (conf.items() if isinstance(conf, Mapping) else conf()) if k.startswith(DEFAULTS_PREFIX)}


def session_codec(spark: Any) -> str:
    """The Parquet compression codec the session's writers use (snappy without a session)."""
    if spark is None:
        return "snappy"
    return str(spark.conf.get("spark.sql.parquet.compression.codec") or "snappy").strip().lower()


def session_time_zone(spark: Any) -> str:
    """The session time zone Spark casts timestamps to text in (UTC without a session)."""
    if spark is None:
        return "UTC"
    return str(spark.conf.get("spark.sql.session.timeZone") or "UTC")


def _snapshot(location: TableLocation) -> DeltaTable | None:
    """The table's latest snapshot as delta-rs reads it; None when no table is there yet."""
    from deltalake import DeltaTable
    from deltalake.exceptions import DeltaError, TableNotFoundError

    from kafka_spark.delta.errors import DeltaLogError

    try:
        return DeltaTable(location.delta_rs_uri or location.path,
                          storage_options=dict(location.storage_options) or None)
    except TableNotFoundError:
        return None
    except DeltaError as exc:
        raise DeltaLogError(f"{location}: the Delta log cannot be read: {exc}") from None
