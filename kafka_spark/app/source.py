"""Where a run's records come from: the brokers and topics given, or the demo's local broker and sample."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_spark.app.config import client_properties
from kafka_spark.app.demo import SAMPLE_TOPIC, SAMPLE_TRANSFORM, Note, seed_sample, start_local_broker
from kafka_spark.app.model import AppConfig, table_location
from kafka_spark.app.payloads import decoding_settings, registry_options
from kafka_spark.app.routing import build_routing, decodes_anywhere, routed, routed_topics, template_location
from kafka_spark.sink.options import Transform
from kafka_spark.sink.read_plan import resolve_transform
from kafka_spark.spark.redaction import redacted_repr


@dataclass
class Source:
    """The brokers, topics and transform a run reads with, the demo's default filled in."""

    kafka: dict[str, str]
    topics: list[str]
    transform: str | Transform | None
    bootstrap: str
    embedded: bool
    seeded: int = 0

    __repr__ = redacted_repr  # `kafka` holds client passwords


def sink_settings(config: AppConfig, source: Source, table: str | None) -> dict[str, Any]:
    """The `LoadOptions` fields both applications take from their settings (a stream adds its trigger and
    limits). With a table template or a `[tables]` map, `table` is None and `routing` holds every table."""
    settings = {"table": table, "kafka": source.kafka, "topics": source.topics, "pattern": config.pattern,
                "sink_id": config.sink_id, "starting": config.starting_offsets,
                "fail_on_data_loss": config.fail_on_data_loss, "partition_by": config.partition_by,
                "sort_by": config.sort_by,
                "transform": source.transform, "include_headers": config.include_headers,
                "publish_group": config.publish_group, "start_zookeeper_group": config.start_zookeeper_group,
                "publish_zookeeper_group": config.publish_zookeeper_group, "value_schema": config.value_schema,
                "dead_letter": table_location(config.dead_letter) if config.dead_letter else None,
                "merge_schema": config.merge_schema, **decoding_settings(config),
                "cdc": config.cdc, "key_columns": config.key_columns, "cdc_metadata": config.cdc_metadata,
                "cdc_soft_delete": config.cdc_soft_delete,
                "cdc_history": table_location(config.cdc_history) if config.cdc_history else None,
                **({"writer": config.writer} if config.writer else {})}
    if not routed(config):
        return settings
    registry = {"schema_registry": registry_options(config)} if decodes_anywhere(config) else {}
    return {**settings, **registry, "table": None, "routing": build_routing(config, resolve_transform),
            "topics": source.topics or routed_topics(config),
            "dead_letter": template_location(config.dead_letter) if config.dead_letter else None}


def resolve_source(config: AppConfig, table: str, note: Note, prestart: Callable[[], None],
                   has_position: Callable[[], bool]) -> Source:
    """The run's source; with no broker given, the local broker, seeded with the sample if it is empty.
    `prestart` begins starting Spark, to overlap it with the broker's start."""
    transform = resolve_transform(config.transform)
    kafka = client_properties(config)
    topics = list(config.topics)
    if not config.embedded:
        where = kafka.get("bootstrap.servers") or f"zookeeper {kafka['zookeeper.connect']}"
        return Source(kafka, topics, transform, where, embedded=False)
    prestart()
    bootstrap, fresh = start_local_broker(note)
    kafka["bootstrap.servers"] = bootstrap
    if fresh and has_position():
        note(f"the broker was started fresh (its topics do not survive `local stop`), but {table} holds "
             "offsets loaded from an earlier one")
    if not topics and not config.pattern:
        topics = [SAMPLE_TOPIC]
    seeded = 0
    if SAMPLE_TOPIC in topics:
        seeded = seed_sample(bootstrap, config.seed_records, note)
        if transform is None and topics == [SAMPLE_TOPIC]:
            transform = SAMPLE_TRANSFORM
    return Source(kafka, topics, transform, bootstrap, embedded=True, seeded=seeded)
