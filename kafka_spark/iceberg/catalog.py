"""The Iceberg catalog a sink writes through: its settings, the open pyiceberg catalog, table names in it.

The embedded default is pyiceberg's SQL catalog on a SQLite file (`<warehouse>/catalog.db`): nothing to start,
the table metadata and data under `warehouse`. Any other catalog pyiceberg serves (REST, Hive, Glue, a SQL
catalog on PostgreSQL) is chosen by its pyiceberg properties (`type`, `uri`, credentials, `s3.*`), passed as
they are. A table is `namespace.table` in the catalog (or `<catalog name>.namespace.table`).

Catalog properties may hold credentials (a REST `credential` or `token`, `s3.secret-access-key`, a password in a
database URI): reprs and messages show them hidden.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_spark.errors import ConfigError
from kafka_spark.sink.table_names import is_table_name, name_parts
from kafka_spark.spark.redaction import is_secret, redacted

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

DEFAULT_NAME = "kafka_spark"
SQLITE_FILE = "catalog.db"
_HIDDEN = "[hidden]"
# A password in a database or server URI (`postgresql+psycopg://user:secret@host/db`).
_URI_PASSWORD = re.compile(r"(?<=://)([^:/@]*):([^@/]*)@")


# pyiceberg's credentials that are not named like Spark's secrets: the REST `credential` (client id and secret),
# access key ids of S3, Glue and DynamoDB clients (as Spark hides `fs.s3a.access.key`), ADLS account keys and
# connection strings (which hold the account key), an S3 SSE-C key, and an Authorization header sent to a REST
# catalog (`header.Authorization`).
_ICEBERG_SECRET = re.compile(r"(?i)(?:credential$|access[._-]?key|account[._-]?key|connection[._-]?string|"
                             r"sse\.key$|(?:^|\.)authorization$|private[._-]?key)")


def is_catalog_secret(name: str) -> bool:
    """Whether the catalog property `name` holds a credential."""
    return is_secret(name) or _ICEBERG_SECRET.search(name.strip()) is not None


def hide_secrets(properties: Mapping[str, str]) -> dict[str, str]:
    """`properties` as they may be shown: secret values hidden, passwords in URIs too."""
    shown = redacted({k: v for k, v in properties.items() if not is_catalog_secret(k)})
    shown.update({k: _HIDDEN for k in properties if is_catalog_secret(k)})
    return {k: _URI_PASSWORD.sub(rf"\1:{_HIDDEN}@", v) if isinstance(v, str) else v for k, v in shown.items()}


@dataclass(frozen=True)
class IcebergCatalog:
    """Where the sink's Iceberg tables are: a pyiceberg catalog.

    `warehouse`: where new tables' data and metadata go (a path or a store URI). Without `uri` and a `type` in
    `properties`, the catalog is pyiceberg's SQL catalog on the SQLite file `<warehouse>/catalog.db` (so
    `warehouse` must then be a local path). `properties`: further pyiceberg catalog properties, as pyiceberg
    documents them (`type`, `uri`, `credential`, `s3.endpoint`, ...); they win over the two above. `name`: the
    catalog's name (tables may be given as `<name>.namespace.table`).
    """

    warehouse: str | None = None
    uri: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    name: str = DEFAULT_NAME

    def __repr__(self) -> str:
        return (f"IcebergCatalog(name={self.name!r}, warehouse={self.warehouse!r}, "
                f"uri={hide_secrets({'uri': self.uri})['uri'] if self.uri else None!r}, "
                f"properties={hide_secrets(self.properties)!r})")

    def catalog_properties(self) -> dict[str, str]:
        """The pyiceberg properties of the catalog, the embedded SQLite default filled in."""
        props: dict[str, str] = {}
        if self.warehouse:
            props["warehouse"] = self.warehouse
        if self.uri:
            props["uri"] = self.uri
        props.update({str(k): str(v) for k, v in self.properties.items()})
        if "type" not in props and "uri" not in props:
            if not self.warehouse or "://" in self.warehouse or self.warehouse.startswith("file:"):
                raise ConfigError("the embedded Iceberg catalog (SQLite) needs `warehouse` as a local directory; "
                                  "give another catalog with `uri` / `properties` (type, uri, ...)")
            root = Path(self.warehouse).expanduser().resolve()
            props["warehouse"] = str(root)
            props["uri"] = f"sqlite:///{root / SQLITE_FILE}"
        if props.get("uri", "").startswith("sqlite") and "type" not in props:
            props["type"] = "sql"
        return props

    def open(self) -> Catalog:
        """The pyiceberg catalog, opened once per process for these settings."""
        return _open(self)

    def identifier(self, table: str) -> tuple[str, ...]:
        """The catalog identifier of `table` (`namespace.table`, or `<name>.namespace.table`); ConfigError for
        a path, which names no Iceberg table."""
        if not is_table_name(table):
            raise ConfigError(f"table {table!r}: an Iceberg table is named in its catalog as namespace.table "
                              "(a path names none)")
        parts = name_parts(table)
        if len(parts) == 3 and parts[0] == self.name:
            parts = parts[1:]  # the catalog's own name, as Spark spells a table of a named catalog
        return tuple(parts)


_OPEN: dict[tuple[str, tuple[tuple[str, str], ...]], Catalog] = {}
_OPEN_LOCK = threading.Lock()


def _open(settings: IcebergCatalog) -> Catalog:
    from pyiceberg.catalog import load_catalog

    props = settings.catalog_properties()
    key = (settings.name, tuple(sorted(props.items())))
    with _OPEN_LOCK:
        found = _OPEN.get(key)
        if found is None:
            if props.get("type") == "sql" and props.get("uri", "").startswith("sqlite:///"):
                Path(props["uri"].removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
            try:
                found = _OPEN[key] = load_catalog(settings.name, **props)
            except Exception as exc:  # pyiceberg's and the driver's errors may repeat the properties
                raise ConfigError(f"the Iceberg catalog {settings!r} cannot be opened: {type(exc).__name__}: "
                                  f"{_hide_values(str(exc), props)}") from None
        return found


def _hide_values(text: str, props: Mapping[str, str]) -> str:
    """`text` without the values of the secret properties (an error message may repeat them)."""
    for key, value in props.items():
        if value and is_catalog_secret(key):
            text = text.replace(value, _HIDDEN)
    return _URI_PASSWORD.sub(rf"\1:{_HIDDEN}@", text)


def as_catalog(catalog: IcebergCatalog | Mapping[str, str] | str | None) -> IcebergCatalog:
    """The catalog settings from what a caller gives: `IcebergCatalog`, a mapping of its fields and pyiceberg
    properties (`{"warehouse": ..., "uri": ..., "type": ...}`), or a warehouse directory."""
    if isinstance(catalog, IcebergCatalog):
        return catalog
    if isinstance(catalog, str):
        return IcebergCatalog(warehouse=catalog)
    if catalog is None:
        raise ConfigError("give the Iceberg catalog: catalog=IcebergCatalog(warehouse='/lake/warehouse') for the "
                          "embedded SQLite catalog, or with pyiceberg properties for another")
    props = {str(k): str(v) for k, v in catalog.items()}
    name = props.pop("name", DEFAULT_NAME)
    return IcebergCatalog(warehouse=props.pop("warehouse", None), uri=props.pop("uri", None), properties=props,
                          name=name)


def frame_arrow_schema(schema: Any) -> Any:
    """The Arrow schema of a Spark StructType, timestamps in UTC as `DataFrame.toArrow` gives them."""
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    # PySpark 4.2 takes the zone by name; older ones label timestamps UTC by default (`timestamp_utc`).
    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema, timezone="UTC")
    return to_arrow_schema(schema)


def optional_schema(schema: Any) -> Any:
    """`schema` (Arrow) with every field nullable, nested ones too: Spark's file writers make every column of a
    table they create nullable, and a table created from one batch's schema must take the next batch's rows,
    whose nullability another read or transform may state differently."""
    import pyarrow as pa

    def loosen(t: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, loosen(f.type), nullable=True) for f in t])
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            item = pa.field(t.value_field.name, loosen(t.value_type), nullable=True)
            return pa.list_(item) if pa.types.is_list(t) else pa.large_list(item)
        if pa.types.is_map(t):
            return pa.map_(loosen(t.key_type), pa.field(t.item_field.name, loosen(t.item_type), nullable=True))
        return t

    return pa.schema([pa.field(f.name, loosen(f.type), nullable=True) for f in schema])
