"""The partition specs of the Iceberg tables the sink creates, from `partition_by` in Iceberg's own spelling.

An entry of `partition_by` is a column (an identity partition, as before) or one of Iceberg's transforms of a
top-level column, written as Spark SQL's Iceberg DDL writes them (`PARTITIONED BY (...)`): `identity(c)`,
`year(c)`, `month(c)`, `day(c)`, `hour(c)` (Spark's plurals `years(c)`, ... too), `bucket(N, c)`,
`truncate(W, c)`. The partition fields are named as Iceberg's Spark DDL names them: `c` for identity, `c_year`,
`c_month`, `c_day`, `c_hour`, `c_bucket`, `c_trunc`.

A table that exists keeps its own spec: a `partition_by` given for it must be that spec (the same transforms of
the same columns, in the same order), or it is refused; none takes the table's as it is.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_spark.errors import ConfigError

if TYPE_CHECKING:
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import Transform
    from pyiceberg.types import NestedField

ACCEPTED = ("a column, identity(c), year(c), month(c), day(c), hour(c), bucket(N, c) or truncate(W, c) "
            "(c: a top-level column; N, W: whole numbers of at least 1)")
# Spark's DDL writes the time transforms in the plural too (`days(ts)`): the same transforms.
_ALIASES = {"years": "year", "months": "month", "days": "day", "hours": "hour"}
_TIME = ("year", "month", "day", "hour")
_WITH_NUMBER = ("bucket", "truncate")
TRANSFORMS = ("identity", *_TIME, *_WITH_NUMBER)
# The suffix of a partition field's name, as Iceberg's PartitionSpec.Builder (and so Spark's DDL) gives it.
_SUFFIX = {"year": "_year", "month": "_month", "day": "_day", "hour": "_hour", "bucket": "_bucket",
           "truncate": "_trunc"}
# What each transform takes, for the errors (Iceberg's spec, as pyiceberg's `can_transform` checks it).
_TAKES = {"identity": "any primitive type", "year": "date, timestamp, timestamptz",
          "month": "date, timestamp, timestamptz", "day": "date, timestamp, timestamptz",
          "hour": "timestamp, timestamptz",
          "bucket": "int, long, decimal, date, time, timestamp(tz), string, uuid, fixed, binary",
          "truncate": "int, long, decimal, string, binary"}

_COLUMN = r"(?:`[^`]+`|[^\s(),`]+)"
_PLAIN = re.compile(rf"\s*(?P<column>{_COLUMN})\s*")
_CALL = re.compile(rf"\s*(?P<name>[A-Za-z_]\w*)\s*\(\s*(?:(?P<number>[+-]?\d+)\s*,\s*)?(?P<column>{_COLUMN})\s*\)\s*")


@dataclass(frozen=True)
class PartitionEntry:
    """One parsed `partition_by` entry: the transform (TRANSFORMS), its column, its count or width."""

    transform: str
    column: str
    number: int | None = None

    @property
    def field_name(self) -> str:
        """The partition field's name, as Iceberg's Spark DDL names it."""
        return self.column if self.transform == "identity" else self.column + _SUFFIX[self.transform]

    def iceberg(self) -> Transform:
        """The pyiceberg transform."""
        from pyiceberg import transforms

        if self.transform == "bucket":
            return transforms.BucketTransform(self.number or 0)
        if self.transform == "truncate":
            return transforms.TruncateTransform(self.number or 0)
        kinds = {"identity": transforms.IdentityTransform, "year": transforms.YearTransform,
                 "month": transforms.MonthTransform, "day": transforms.DayTransform, "hour": transforms.HourTransform}
        return kinds[self.transform]()

    def __str__(self) -> str:
        if self.transform == "identity":
            return self.column
        number = f"{self.number}, " if self.number is not None else ""
        return f"{self.transform}({number}{self.column})"


def _refused(entry: str, why: str, option: str = "partition_by", accepted: str = ACCEPTED) -> ConfigError:
    return ConfigError(f"{option} entry {entry!r}: {why}; accepted: {accepted}")


def parse_entry(entry: str, option: str = "partition_by", accepted: str = ACCEPTED) -> PartitionEntry:
    """The entry parsed (transform names in any case, spaces anywhere between the parts); ConfigError naming it,
    the option it was given as (`sort_by` takes the same expressions) and what is `accepted`."""
    def refused(why: str) -> ConfigError:
        return _refused(str(entry), why, option, accepted)

    if not isinstance(entry, str):
        raise refused("not a string")
    plain = _PLAIN.fullmatch(entry)
    if plain is not None:
        return PartitionEntry("identity", _unquoted(plain["column"]))
    call = _CALL.fullmatch(entry)
    if call is None:
        raise refused("neither a column nor a transform of one")
    name = _ALIASES.get(call["name"].lower(), call["name"].lower())
    column, number = _unquoted(call["column"]), call["number"]
    if name not in TRANSFORMS:
        raise refused(f"unknown transform {call['name']}")
    if name in _WITH_NUMBER:
        if number is None:
            what = "count" if name == "bucket" else "width"
            raise refused(f"{name} takes a {what} first: {name}({'N' if name == 'bucket' else 'W'}, c)")
        if int(number) < 1:
            what = "bucket count" if name == "bucket" else "truncate width"
            raise refused(f"the {what} must be at least 1, got {int(number)}")
        return PartitionEntry(name, column, int(number))
    if number is not None:
        raise refused(f"{name} takes the column alone: {name}(c)")
    return PartitionEntry(name, column)


def _unquoted(column: str) -> str:
    return column[1:-1] if column.startswith("`") and column.endswith("`") else column


def parse_partitions(partition_by: Sequence[str]) -> list[PartitionEntry]:
    """Every entry parsed; ConfigError for a bad one, for two fields of one name (`bucket(4, k)` and
    `bucket(8, k)` are both `k_bucket`), and for a column partitioned twice (pyiceberg's writers partition a
    column one way only)."""
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    entries = [parse_entry(e) for e in partition_by]
    names: dict[str, PartitionEntry] = {}
    columns: dict[str, PartitionEntry] = {}
    for entry in entries:
        if entry.field_name in names:
            raise ConfigError(f"partition_by: {names[entry.field_name]} and {entry} are both the partition field "
                              f"{entry.field_name}; give one")
        if entry.column in columns:
            raise ConfigError(f"partition_by: {columns[entry.column]} and {entry} partition the column "
                              f"{entry.column} twice; pyiceberg's writers partition a column one way only")
        names[entry.field_name] = columns[entry.column] = entry
    return entries


def partition_spec(schema: Schema, partition_by: Sequence[str]) -> PartitionSpec:
    """The spec of a new table of `schema` partitioned by `partition_by`: field ids from 1000 in the entries'
    order, Iceberg's Spark DDL names; ConfigError for a column the schema lacks or of a type the transform does
    not take."""
    from pyiceberg.partitioning import PARTITION_FIELD_ID_START, PartitionField, PartitionSpec

    fields = []
    for position, entry in enumerate(parse_partitions(partition_by)):
        source = _source(schema, entry)
        transform = entry.iceberg()
        if not transform.can_transform(source.field_type):
            raise _refused(str(entry), f"{entry.transform} does not take column {entry.column} of type "
                                       f"{source.field_type} ({entry.transform} takes {_TAKES[entry.transform]})")
        if entry.transform != "identity" and entry.field_name in _top_level(schema):
            raise ConfigError(f"partition_by entry {str(entry)!r}: its partition field {entry.field_name} has the "
                              "name of a column of the rows; rename that column (a transform) or partition otherwise")
        fields.append(PartitionField(source_id=source.field_id, field_id=PARTITION_FIELD_ID_START + position,
                                     transform=transform, name=entry.field_name))
    return PartitionSpec(*fields)


def iceberg_schema(rows: Any) -> Schema:
    """The Iceberg schema of Arrow `rows` with the field ids a new table of them gets."""
    from pyiceberg.catalog import Catalog
    from pyiceberg.schema import assign_fresh_schema_ids

    return assign_fresh_schema_ids(Catalog._convert_schema_if_needed(rows))


def _top_level(schema: Schema) -> dict[str, NestedField]:
    return {f.name: f for f in schema.fields}


def _source(schema: Schema, entry: PartitionEntry) -> NestedField:
    columns = _top_level(schema)
    found = columns.get(entry.column)
    if found is None:
        raise _refused(str(entry), f"{entry.column} is not a column of the rows ({', '.join(columns)})")
    return found


def spelled(spec: PartitionSpec, schema: Schema) -> list[str]:
    """`spec` as `partition_by` entries (a void field, a dropped one, left out)."""
    entries = []
    for field in spec.fields:
        entry = spell_transform(field.transform, schema.find_column_name(field.source_id) or
                                f"<field {field.source_id}>")
        if entry is not None:
            entries.append(entry)
    return entries


def spell_transform(transform: Transform, column: str) -> str | None:
    """`transform` of `column` as an entry spells it (None: a void transform, which orders nothing)."""
    from pyiceberg.transforms import BucketTransform, IdentityTransform, TruncateTransform, VoidTransform

    if isinstance(transform, VoidTransform):
        return None
    if isinstance(transform, IdentityTransform):
        return column
    if isinstance(transform, BucketTransform):
        return f"bucket({transform.num_buckets}, {column})"
    if isinstance(transform, TruncateTransform):
        return f"truncate({transform.width}, {column})"
    return f"{transform}({column})"


def check_table_spec(spec: PartitionSpec, schema: Schema, partition_by: Sequence[str], table: str) -> None:
    """Refuse `partition_by` for the existing `table` of this spec and schema unless it is the table's spec
    (the same transforms of the same columns, in order); an empty one takes the table's spec."""
    if not partition_by:
        return
    wanted = [str(e) for e in parse_partitions(partition_by)]
    have = spelled(spec, schema)
    if wanted != have:
        raise ConfigError(f"partition_by ({', '.join(wanted)}) differs from the partitioning of the existing table "
                          f"{table} ({', '.join(have) or 'none'}): a table keeps its own spec; give partition_by as "
                          "that spec, or none to write the table as it is partitioned")


def require_transforms(spec: PartitionSpec, table: str) -> None:
    """ConfigError when `spec` has a transform pyiceberg computes with `pyiceberg-core` and it is missing (the
    writers would fail on the first rows)."""
    needs = [f.name for f in spec.fields if needs_core(f.transform)]
    require_core(needs, f"the partition transforms of {', '.join(needs)}", table)


def needs_core(transform: Any) -> bool:
    """Whether pyiceberg computes `transform` of Arrow columns with `pyiceberg-core` (all but identity and void)."""
    from pyiceberg.transforms import IdentityTransform, VoidTransform

    return not isinstance(transform, (IdentityTransform, VoidTransform))


def require_core(needs: Sequence[str], what: str, table: str) -> None:
    """ConfigError naming `what` of `table` when `needs` (its transforms) is not empty and `pyiceberg-core` is
    missing."""
    if needs and not core_installed():
        raise ConfigError(f"{table}: pyiceberg computes {what} with the pyiceberg-core package, which is not "
                          "installed: pip install 'pyiceberg[pyiceberg-core]'")


def core_installed() -> bool:
    """Whether `pyiceberg-core` (pyiceberg's transforms of Arrow columns) can be imported."""
    return importlib.util.find_spec("pyiceberg_core") is not None
