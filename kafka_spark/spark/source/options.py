"""Source options with the names, defaults and checks of Spark's built-in Kafka source (no pyspark here)."""

from __future__ import annotations

import difflib
import json
import logging
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypedDict

from kafka_spark.errors import ConfigError
from kafka_spark.formats.options import OPTION_NAMES as PAYLOAD_OPTIONS
from kafka_spark.formats.options import REGISTRY_PREFIX, PayloadOptions, payload_options
from kafka_spark.offsets.ranges import (
    EARLIEST,
    EARLIEST_SPEC,
    LATEST,
    LATEST_SPEC,
    OffsetRange,
    OffsetSpec,
    TopicPartition,
    offsets_from_json,
    ranges_from_json,
)
from kafka_spark.spark.redaction import redacted_repr
from kafka_spark.zookeeper.settings import ZooKeeperSettings

if TYPE_CHECKING:
    from kafka_spark.formats.plan import PayloadPlan

log = logging.getLogger(__name__)

# "any": the checks common to both, for schema(), which Spark calls before it knows the mode.
Mode = Literal["batch", "stream", "any"]

# Lower-cased option name -> the spelling shown in messages.
_SOURCE_OPTIONS = {k.lower(): k for k in (
    "subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets", "startingOffsetsByTimestamp",
    "endingOffsetsByTimestamp", "startingTimestamp", "endingTimestamp", "startingOffsetsByTimestampStrategy",
    "failOnDataLoss", "minPartitions", "maxRecordsPerPartition", "maxOffsetsPerTrigger", "minOffsetsPerTrigger",
    "maxTriggerDelay", "includeHeaders", "groupIdPrefix",
    # Tuning knobs of the JVM connector: accepted so pipelines switch unchanged; our client has its own.
    "fetchOffset.numRetries", "fetchOffset.retryIntervalMs", "kafkaConsumer.pollTimeoutMs",
    # Ours.
    "commitOffsetsToKafka", "startingOffsetsFromZooKeeperGroup", *PAYLOAD_OPTIONS,
)}
# Internal, for batch reads whose offsets a caller planned already (the Delta load): the tasks as it
# resolved them, read as they are instead of being planned again (see `planned_ranges`).
PLANNED_RANGES = "plannedRanges"
_IGNORED_JVM_KNOBS = {"fetchoffset.numretries", "fetchoffset.retryintervalms", "kafkaconsumer.polltimeoutms"}
_STRATEGIES = ("subscribe", "subscribepattern", "assign")
_STRATEGY_NAMES = "subscribe, subscribePattern, assign"

_UNSUPPORTED_KAFKA = {
    "auto.offset.reset": "Kafka option 'auto.offset.reset' is not supported. Instead set the source option "
                         "'startingOffsets' to 'earliest' or 'latest' to specify where to start.",
    "key.deserializer": "Kafka option 'key.deserializer' is not supported as keys are returned as binary. "
                        "Use DataFrame operations to explicitly deserialize the keys.",
    "value.deserializer": "Kafka option 'value.deserializer' is not supported as values are returned as binary. "
                          "Use DataFrame operations to explicitly deserialize the values.",
    "enable.auto.commit": "Kafka option 'enable.auto.commit' is not supported",
    "interceptor.classes": "Kafka option 'interceptor.classes' is not supported",
}

# Spark's timeStringAsMs: a bare number is milliseconds; microseconds round down.
_DURATION = re.compile(r"^\s*(\d+)\s*(us|ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_DURATION_MS = {None: 1.0, "us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "min": 60_000.0, "h": 3_600_000.0,
                "d": 86_400_000.0}


@dataclass(frozen=True)
class SourceOptions:
    """Validated options of a `pykafka` read; `kafka` holds the `kafka.*` options without the prefix."""

    kafka: dict[str, str]
    subscribe: tuple[str, ...] = ()
    pattern: str | None = None
    assign: tuple[TopicPartition, ...] = ()
    starting: OffsetSpec = EARLIEST_SPEC
    ending: OffsetSpec = LATEST_SPEC
    no_match_strategy: Literal["error", "latest"] = "error"
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    group_id_prefix: str | None = None
    commit_offsets_to_kafka: bool = False
    zookeeper_group: str | None = None
    # keyFormat / valueFormat and the registry; `payload_plan` holds the query's schemas once resolved.
    payloads: PayloadOptions | None = None
    payload_plan: PayloadPlan | None = None

    __repr__ = redacted_repr  # `kafka` holds client passwords

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka.get("bootstrap.servers", "")

    @property
    def topics(self) -> tuple[str, ...]:
        """The topics named by `subscribe` or `assign` (none for a pattern)."""
        return self.subscribe or tuple(dict.fromkeys(tp.topic for tp in self.assign))


def parse_source_options(options: Mapping[str, str], mode: Mode = "batch", *, source: str = "pykafka",
                         own_options: Collection[str] = (), brokers_required: bool = True) -> SourceOptions:
    """Validate `options` (case-insensitive names) for a batch or streaming read; raise ConfigError.

    Another format built on these options (pykafka-log) passes its name as `source`, the names of its
    own options (accepted here, parsed by it) and whether `kafka.bootstrap.servers` is required.
    """
    opts = {k.lower(): v for k, v in options.items() if v is not None}
    kafka = {k[len("kafka."):]: v for k, v in options.items() if k.lower().startswith("kafka.")}
    _check_names(opts, source, {k.lower(): k for k in own_options})
    strategy = _strategy(opts)
    _check_kafka_params(kafka, opts, brokers_required)

    if mode == "stream":
        if "commitoffsetstokafka" in opts and "group.id" not in kafka and opts["commitoffsetstokafka"].strip(
                ).lower() == "true":
            raise ConfigError("option 'commitOffsetsToKafka' needs 'kafka.group.id': the consumer group to "
                              "commit each finished micro-batch's offsets to")
        if "endingoffsets" in opts:
            raise ConfigError("ending offset not valid in streaming queries")
        if "endingoffsetsbytimestamp" in opts:
            raise ConfigError("ending timestamp not valid in streaming queries")
    starting = _offset_spec(opts, "startingtimestamp", "startingoffsetsbytimestamp", "startingoffsets",
                            LATEST_SPEC if mode == "stream" else EARLIEST_SPEC)
    ending = _offset_spec(opts, "endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets", LATEST_SPEC)
    if mode == "batch":
        _check_batch_limits(starting, ending)
    _check_same_partitions(starting, ending)

    max_off = _positive_int(opts, "maxoffsetspertrigger")
    min_off = _positive_int(opts, "minoffsetspertrigger")
    if max_off is not None and min_off is not None and min_off > max_off:
        raise ConfigError(f"The value of minOffsetPerTrigger({min_off}) is higher than the "
                          f"maxOffsetsPerTrigger({max_off}).")
    if mode == "batch":
        for name in ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay", "commitoffsetstokafka"):
            if name in opts:
                log.warning("%s option ignored in batch queries", _SOURCE_OPTIONS[name])
    strategy_name = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy_name not in ("error", "latest"):
        raise ConfigError(f"option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
                          f"got {opts['startingoffsetsbytimestampstrategy']!r}")
    no_match: Literal["error", "latest"] = "latest" if strategy_name == "latest" else "error"
    return SourceOptions(
        kafka=kafka,
        **strategy,
        starting=starting,
        ending=ending,
        no_match_strategy=no_match,
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        min_partitions=_positive_int(opts, "minpartitions", message="minPartitions must be positive"),
        max_records_per_partition=_positive_int(opts, "maxrecordsperpartition",
                                                message="maxRecordsPerPartition must be positive"),
        include_headers=_bool(opts, "includeheaders", False),
        max_offsets_per_trigger=max_off,
        min_offsets_per_trigger=min_off,
        max_trigger_delay_ms=duration_ms(opts.get("maxtriggerdelay", "15m"), "maxTriggerDelay"),
        group_id_prefix=opts.get("groupidprefix"),
        commit_offsets_to_kafka=_bool(opts, "commitoffsetstokafka", False),
        zookeeper_group=_zookeeper_group(opts, kafka),
        payloads=payload_options(options),
    )


def planned_ranges(options: Mapping[str, str], parsed: SourceOptions) -> list[OffsetRange] | None:
    """The tasks `plannedRanges` gives (None without it), which must cover exactly the read's assigned
    partitions from its `startingOffsets` to its `endingOffsets`."""
    text = next((v for k, v in options.items() if k.lower() == PLANNED_RANGES.lower()), None)
    if text is None:
        return None
    ranges = ranges_from_json(text, PLANNED_RANGES)
    starts, ends = parsed.starting.offsets, parsed.ending.offsets
    covered = (parsed.starting.kind, parsed.ending.kind) == ("offsets", "offsets") and set(parsed.assign) == set(starts)
    reached: dict[TopicPartition, int] = {}
    for r in sorted(ranges, key=lambda r: (r.topic_partition, r.start)):
        tp = r.topic_partition
        covered = covered and tp in starts and r.start == reached.get(tp, starts[tp])
        reached[tp] = r.end
    if not covered or any(reached.get(tp, off) != ends[tp] for tp, off in starts.items()):
        raise ConfigError(f"option {PLANNED_RANGES!r} must cover the assigned partitions from startingOffsets to "
                          "endingOffsets, each offset once")
    return ranges


def _check_names(opts: Mapping[str, str], source: str, own: Mapping[str, str]) -> None:
    known = {**_SOURCE_OPTIONS, **own}
    for name in opts:
        if name.startswith(("kafka.", REGISTRY_PREFIX)) or name in known or name == "path":
            continue
        close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
        hint = f"; did you mean {known[close[0]]!r}?" if close else ""
        raise ConfigError(
            f"unknown option {name!r} for the {source} source{hint} Known options: "
            f"{', '.join(sorted(known.values()))}, and kafka.* for the Kafka client."
        )
    for name in _IGNORED_JVM_KNOBS & set(opts):
        log.info("option %s is specific to Spark's JVM connector and has no effect here", _SOURCE_OPTIONS[name])


class _Strategy(TypedDict, total=False):
    """The one topic selection of a read, as SourceOptions fields."""

    subscribe: tuple[str, ...]
    pattern: str
    assign: tuple[TopicPartition, ...]


def _strategy(opts: Mapping[str, str]) -> _Strategy:
    given = [s for s in _STRATEGIES if s in opts]
    if not given:
        raise ConfigError(f"One of the following options must be specified for Kafka source: {_STRATEGY_NAMES}. "
                          "See the docs for more details.")
    if len(given) > 1:
        raise ConfigError(f"Only one of the following options can be specified for Kafka source: "
                          f"{_STRATEGY_NAMES}. See the docs for more details.")
    name, value = given[0], opts[given[0]]
    if name == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise ConfigError(f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'")
        return {"subscribe": topics}
    if name == "subscribepattern":
        if not value.strip():
            raise ConfigError(f"Pattern to subscribe is empty as specified value for option "
                              f"'subscribePattern' is '{value}'")
        try:
            re.compile(value.strip())
        except re.error as exc:
            raise ConfigError(f"option 'subscribePattern': invalid regular expression {value!r} ({exc})") from None
        return {"pattern": value.strip()}
    if not value.strip().startswith("{"):
        raise ConfigError(f"No topicpartitions to assign as specified value for option 'assign' is '{value}'")
    try:
        raw = json.loads(value)
        assigned = tuple(TopicPartition(t, int(p)) for t, ps in raw.items() for p in ps)
    except (ValueError, TypeError, AttributeError):
        raise ConfigError(f"option 'assign': expected JSON like {{\"topicA\":[0,1],\"topicB\":[2,4]}}, "
                          f"got {value!r}") from None
    return {"assign": assigned}


def _check_kafka_params(kafka: Mapping[str, str], opts: Mapping[str, str], brokers_required: bool) -> None:
    lowered = {k.lower() for k in kafka}
    for key, message in _UNSUPPORTED_KAFKA.items():
        if key in lowered:
            raise ConfigError(message)
    if brokers_required and "bootstrap.servers" not in kafka and "zookeeper.connect" not in kafka:
        raise ConfigError("Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer "
                          "(or 'kafka.zookeeper.connect' to discover the brokers of a ZooKeeper-mode cluster)")
    ZooKeeperSettings.from_properties(kafka, prefix="kafka.")
    if "group.id" in kafka:
        log.warning("Kafka option 'kafka.group.id' is set: concurrent queries with the same group id "
                    "interfere with each other; prefer one query per group id")
        if "groupidprefix" in opts:
            log.warning("Option groupIdPrefix will be ignored as option kafka.group.id has been set.")


def _zookeeper_group(opts: Mapping[str, str], kafka: Mapping[str, str]) -> str | None:
    name = "startingoffsetsfromzookeepergroup"
    if name not in opts:
        return None
    group = opts[name].strip()
    if not group or "/" in group:
        raise ConfigError(f"option 'startingOffsetsFromZooKeeperGroup' must be a consumer group name, got "
                          f"{opts[name]!r}")
    if "zookeeper.connect" not in kafka:
        raise ConfigError("option 'startingOffsetsFromZooKeeperGroup' needs 'kafka.zookeeper.connect': the "
                          "ZooKeeper that holds the group's offsets (/consumers/<group>/offsets)")
    return group


def _offset_spec(opts: Mapping[str, str], global_ts: str, by_ts: str, by_offset: str,
                 default: OffsetSpec) -> OffsetSpec:
    # Preference order is Spark's: global timestamp, then per-partition timestamps, then offsets.
    if global_ts in opts:
        text = opts[global_ts].strip()
        try:
            return OffsetSpec("timestamp", timestamp=int(text))
        except ValueError:
            raise ConfigError(f"option {_SOURCE_OPTIONS[global_ts]!r}: Expected a single long value, "
                              f"got {text}") from None
    if by_ts in opts:
        return OffsetSpec("timestamps", timestamps=offsets_from_json(opts[by_ts], _SOURCE_OPTIONS[by_ts]))
    if by_offset in opts:
        text = opts[by_offset].strip()
        if text.lower() == "earliest":
            return EARLIEST_SPEC
        if text.lower() == "latest":
            return LATEST_SPEC
        return OffsetSpec("offsets", offsets=offsets_from_json(text, _SOURCE_OPTIONS[by_offset]))
    return default


def _check_batch_limits(starting: OffsetSpec, ending: OffsetSpec) -> None:
    if starting.kind == "latest":
        raise ConfigError("starting offset can't be latest for batch queries on Kafka")
    for tp, off in starting.offsets.items():
        if off == LATEST:
            raise ConfigError(f"startingOffsets for {tp} can't be latest for batch queries on Kafka")
    if ending.kind == "earliest":
        raise ConfigError("ending offset can't be earliest for batch queries on Kafka")
    for tp, off in ending.offsets.items():
        if off == EARLIEST:
            raise ConfigError(f"ending offset for {tp} can't be earliest for batch queries on Kafka")


def _check_same_partitions(starting: OffsetSpec, ending: OffsetSpec) -> None:
    for a, b, what in ((starting.offsets, ending.offsets, "offset"), (starting.timestamps, ending.timestamps,
                                                                       "timestamp")):
        if not a or not b:
            continue
        if set(a) != set(b):
            raise ConfigError(
                f"The specified start {what} and end {what} should have the same topic-partitions. "
                f"Start {what}: {sorted(map(str, a))}, end {what}: {sorted(map(str, b))} "
                f"({sorted(map(str, set(a) ^ set(b)))} appear in only one of them)")
        for tp, start in a.items():
            end = b[tp]
            if start >= 0 and end >= 0 and start > end:
                raise ConfigError(f"The specified start {what} {start} is greater than the end {what} {end} for "
                                  f"topic {tp.topic} partition {tp.partition}.")


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    if name not in opts:
        return default
    text = opts[name].strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"option {_SOURCE_OPTIONS[name]!r} must be 'true' or 'false', got {opts[name]!r}")
    return text == "true"


def _positive_int(opts: Mapping[str, str], name: str, message: str | None = None) -> int | None:
    if name not in opts:
        return None
    try:
        value = int(opts[name].strip())
    except ValueError:
        raise ConfigError(f"option {_SOURCE_OPTIONS[name]!r} must be a positive integer, "
                          f"got {opts[name]!r}") from None
    if value <= 0:
        raise ConfigError(message or f"option {_SOURCE_OPTIONS[name]!r} must be positive, got {value}")
    return value


def duration_ms(text: str, option: str) -> int:
    """Milliseconds of a Spark time string (`500ms`, `30s`, `15m`, `1h`; a bare number is ms)."""
    m = _DURATION.match(text)
    if not m:
        raise ConfigError(f"option {option!r}: expected a duration such as '500ms', '30s', '15m' or '1h', "
                          f"got {text!r}")
    unit = m.group(2).lower() if m.group(2) else None
    return int(int(m.group(1)) * _DURATION_MS[unit])
