"""The applications' settings as one value (`AppConfig`), and where a table setting points; config.py fills it
from a file, the environment and the flags, payloads.py and routing.py read it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_spark.sink.table_names import is_table_name
from kafka_spark.spark.redaction import redacted_repr

# The demo's table when no broker and no table are given: under the directory the run starts from.
SAMPLE_TABLE = Path("data") / "page_views"
SAMPLE_RECORDS = 200_000
# A setting KEY is also read from the environment variable KAFKA_SPARK_KEY (dashes as underscores).
ENV_PREFIX = "KAFKA_SPARK_"


@dataclass
class AppConfig:
    """Settings both applications take, merged from the config file, the environment and the flags."""

    bootstrap_servers: str | None = None
    zookeeper: str | None = None
    topics: list[str] = field(default_factory=list)
    pattern: str | None = None
    table: str | None = None
    sink_id: str = "default"
    starting_offsets: str = "earliest"
    partition_by: list[str] = field(default_factory=list)
    sort_by: list[str] = field(default_factory=list)
    transform: str | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    publish_group: str | None = None
    start_zookeeper_group: str | None = None
    publish_zookeeper_group: str | None = None
    value_schema: str | None = None
    dead_letter: str | None = None
    seed_records: int = SAMPLE_RECORDS
    merge_schema: bool = False
    cdc: str | None = None
    key_columns: list[str] = field(default_factory=list)
    cdc_metadata: bool = False
    cdc_soft_delete: bool = False
    cdc_history: str | None = None
    writer: str | None = None
    value_format: str | None = None
    key_format: str | None = None
    # The registry's URL may carry user:password@, and its settings secrets: neither is in repr.
    schema_registry: str | None = field(default=None, repr=False)
    value_subject: str | None = None
    key_subject: str | None = None
    schema_evolution_mode: str | None = None
    kafka: dict[str, str] = field(default_factory=dict)
    registry: dict[str, str] = field(default_factory=dict, repr=False)
    # A table per topic (routing.py): the template, the [tables] map, the [topics.NAME] overrides.
    table_template: str | None = None
    tables: dict[str, str] = field(default_factory=dict)
    topic_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    on_table_error: str | None = None
    # The table format (table_formats.py): delta or iceberg, and the Iceberg catalog. The catalog's URI may carry
    # a password and its pyiceberg properties credentials: neither is in repr.
    table_format: str = "delta"
    iceberg_catalog: str | None = None
    iceberg_catalog_uri: str | None = field(default=None, repr=False)
    iceberg_warehouse: str | None = None
    iceberg: dict[str, str] = field(default_factory=dict, repr=False)

    # `kafka` holds client passwords (sasl.jaas.config, ssl.key.password): the repr hides them.
    __repr__ = redacted_repr

    @property
    def embedded(self) -> bool:
        """No broker given anywhere: use the local broker and the sample data."""
        return not (self.bootstrap_servers or self.zookeeper or "bootstrap.servers" in self.kafka
                    or "zookeeper.connect" in self.kafka)


def table_location(table: str) -> str:
    """The table as the sink takes it: a catalog name (`db.table`) or a store URI as given, a local path
    (or `file:` URI) made absolute."""
    if is_table_name(table):
        return table.strip()
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", table)
    if scheme and scheme.group(1).lower() != "file":
        return table
    return str(Path(table.removeprefix("file:")).expanduser().resolve())
