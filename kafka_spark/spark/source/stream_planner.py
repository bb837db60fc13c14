"""Driver-side planning of micro-batches: latest offsets, and a batch's [start, end) split into tasks.

The same resolver and splitter as the batch planner; what is stream-only is Spark's handling of
partitions that appear, disappear or move backwards between two batches (`failOnDataLoss`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from kafka_spark.client.cluster import Cluster
from kafka_spark.client.errors import BootstrapUnreachableError, RetriesExhaustedError, UnknownTopicError
from kafka_spark.client.fetch.offsets import earliest_offsets, latest_offsets
from kafka_spark.client.metadata import TopicPartition
from kafka_spark.errors import DataLossError
from kafka_spark.offsets.ranges import OffsetRange, scala_set, split_ranges
from kafka_spark.offsets.resolve import leader_hints as _leaders
from kafka_spark.offsets.resolve import resolve_partitions
from kafka_spark.spark.source.options import SourceOptions

log = logging.getLogger(__name__)

Offsets = Mapping[TopicPartition, int]

# The text of Spark's KAFKA_DATA_LOSS error condition (kafka-error-conditions.json): the explanation,
# then "Reason:" and the sub-condition's text. Spark joins a template's lines with newlines.
DATA_LOSS_EXPLANATION = (
    "Some data may have been lost because they are not available in Kafka any more;\n"
    "either the data was aged out by Kafka or the topic may have been deleted before all the data in the\n"
    "topic was processed.\n"
    "If you don't want your streaming query to fail on such cases, set the source option failOnDataLoss to false.\n"
    "Reason:")
# What Spark appends to the warning it logs instead with failOnDataLoss=false.
DATA_LOSS_HINT_OFF = (
    "Some data may have been lost because they are not available in Kafka any more; either the data was "
    "aged out by Kafka or the topic may have been deleted before all the data in the topic was processed. "
    "If you want your streaming query to fail on such cases, set the source option \"failOnDataLoss\" to "
    "\"true\".")
GROUP_ID_WARNING = (
    "Kafka option 'kafka.group.id' has been set on this query, it is\n"
    "not recommended to set this option. This option is unsafe to use since multiple concurrent\n"
    "queries or sources using the same group id will interfere with each other as they are part\n"
    "of the same consumer group. Restarted queries may also suffer interference from the\n"
    "previous run having the same group id. The user should have only one query per group id,\n"
    "and/or set the option 'kafka.session.timeout.ms' to be very small so that the Kafka\n"
    "consumers from the previous query are marked dead by the Kafka group coordinator before the\n"
    "restarted query starts running.")
RECREATED_HINT = ("This could be either 1) a user error that the start offset is set beyond available offset when "
                  "starting query, or 2) the kafka topic-partition is deleted and re-created.")


class StreamDataLossError(DataLossError):
    """Spark's `KAFKA_DATA_LOSS.*` conditions of a stream; `condition` names which, `reason` says what."""

    def __init__(self, condition: str, reason: str) -> None:
        self.condition, self.reason = condition, reason
        super().__init__(f"[KAFKA_DATA_LOSS.{condition}] {DATA_LOSS_EXPLANATION} {reason}")


def report_data_loss(options: SourceOptions, condition: str, reason: str, warning: str) -> None:
    """Raise with failOnDataLoss (the default), else log Spark's warning and go on.

    Spark words the two differently: `reason` is its error condition's text, `warning` its log line.
    """
    if options.fail_on_data_loss:
        raise StreamDataLossError(condition, reason)
    log.warning("%s. %s", warning, DATA_LOSS_HINT_OFF)


def selected_partitions(cluster: Cluster, options: SourceOptions) -> list[TopicPartition]:
    """The partitions the subscription names right now (a missing subscribed topic is an error)."""
    # Every trigger looks at fresh metadata, as Spark's source describes its topics each time: a cache
    # (metadata.max.age.ms) would hide added partitions and deleted topics for minutes.
    named = set(options.subscribe) | {t for t, _ in options.assign}
    if named:
        cluster.refresh_metadata(named)
    return resolve_partitions(cluster, options.subscribe, options.pattern, options.assign)


def fetch_latest(cluster: Cluster, options: SourceOptions, known: Offsets | None = None,
                 retries: int = 3, interval_s: float = 1.0) -> dict[TopicPartition, int]:
    """Latest offsets of the selected partitions; re-asked while one is below a known offset (KAFKA-7703)."""
    latest = _selected_latest(cluster, options, retries, interval_s)
    seen = known or {}
    for _ in range(retries if seen else 0):
        behind = [tp for tp, off in latest.items() if tp in seen and off < seen[tp]]
        if not behind:
            break
        log.warning("latest offsets of %s are behind offsets already seen; asking again", behind[:5])
        time.sleep(interval_s)
        latest = _selected_latest(cluster, options, retries, interval_s)
    return latest


def _selected_latest(cluster: Cluster, options: SourceOptions, retries: int, interval_s: float
                     ) -> dict[TopicPartition, int]:
    # A topic that matches subscribePattern can be deleted between the listing and the offset lookup:
    # like Spark's retried offset fetch, list the topics again (then it is a deleted partition, not an
    # error). A subscribed topic that is gone stays an error, as in Spark.
    isolation = cluster.config.isolation_level
    for attempt in range(retries + 1):
        try:
            tps = selected_partitions(cluster, options)
            return latest_offsets(cluster, tps, isolation) if tps else {}
        except (UnknownTopicError, RetriesExhaustedError) as exc:
            # A cluster never reached is not a topic that went away: listing again only delays the error.
            if not options.pattern or attempt == retries or isinstance(exc, BootstrapUnreachableError):
                raise
            log.warning("a topic matching subscribePattern went away while listing offsets (%s); listing again", exc)
            time.sleep(interval_s)
    raise AssertionError("unreachable")


def plan_micro_batch(cluster: Cluster, options: SourceOptions, start: Offsets, end: Offsets
                     ) -> list[OffsetRange]:
    """The tasks of one micro-batch, following Spark's rules for new, deleted and rewound partitions."""
    new = [tp for tp in end if tp not in start]
    begins: dict[TopicPartition, int] = {tp: off for tp, off in start.items() if tp in end}
    if new:
        earliest = earliest_offsets(cluster, new)
        missing = [tp for tp in new if tp not in earliest]
        if missing:
            report_data_loss(options, "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS",
                             f"Cannot find initial offsets for partitions {scala_set(missing)}. "
                             "They may have been deleted.",
                             f"Cannot find earliest offsets of {scala_set(missing)}. Some data may have been missed")
        for tp in new:
            if tp not in earliest:
                continue
            if earliest[tp] != 0:
                report_data_loss(options, "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO",
                                 f"Added partition {tp} starts from {earliest[tp]} instead of 0.",
                                 f"Added partition {tp} starts from {earliest[tp]} instead of 0. "
                                 "Some data may have been missed")
            begins[tp] = earliest[tp]
    deleted = sorted(set(start) - set(end))
    if deleted:
        gone = scala_set(deleted)
        if "group.id" in options.kafka:
            report_data_loss(options, "PARTITIONS_DELETED_AND_GROUP_ID_CONFIG_PRESENT",
                             f"Partitions {gone} have been deleted.\n{GROUP_ID_WARNING}",
                             f"{gone} are gone. {GROUP_ID_WARNING}")
        else:
            report_data_loss(options, "PARTITIONS_DELETED", f"Partitions {gone} have been deleted.",
                             f"{gone} are gone. Some data may have been missed.")
    ranges: list[OffsetRange] = []
    leaders = _leaders(cluster, [tp for tp in begins if end[tp] > begins[tp]])
    for tp in sorted(begins):
        frm, until = begins[tp], end[tp]
        if until < frm:
            report_data_loss(options, "PARTITION_OFFSET_CHANGED",
                             f"Partition {tp} offset was changed from {frm} to {until}.\n{RECREATED_HINT}",
                             f"Partition {tp}'s offset was changed from {frm} to {until}. {RECREATED_HINT}")
            continue
        ranges.append(OffsetRange(tp.topic, tp.partition, frm, until, leaders.get(tp)))
    return split_ranges(ranges, options.min_partitions, options.max_records_per_partition)

