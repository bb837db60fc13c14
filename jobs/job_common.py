"""What the Kafka -> Delta jobs share: settings from a TOML file and flags, the embedded local broker
with its sample page views, the Spark session, and one-line errors."""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import os
import random
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_spark.client import ClientConfig, KafkaClient, Producer
from kafka_spark.delta.catalog import is_table_name
from kafka_spark.delta.dead_letter import require_schema
from kafka_spark.delta.position import check_sink_id
from kafka_spark.errors import ConfigError, KafkaSparkError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: everything but --config still works
    tomllib = None  # type: ignore[assignment]

REPO = Path(__file__).resolve().parent.parent
SAMPLE_TOPIC = "page_views"
SAMPLE_PARTITIONS = 6
SAMPLE_RECORDS = 200_000
SAMPLE_TABLE = REPO / "data" / "page_views"
STOP_HINT = ".venv/bin/kafka-spark local stop"

# The sample's JSON value as columns; the Kafka coordinates stay so every row can be traced to its record.
SAMPLE_TRANSFORM = """
SELECT e.user, e.page, e.referrer, timestamp_millis(e.ts) AS event_time, e.duration_ms,
       topic, partition, offset, timestamp
FROM (SELECT from_json(CAST(value AS STRING),
                       'user STRING, page STRING, referrer STRING, ts BIGINT, duration_ms INT') AS e,
             topic, partition, offset, timestamp
      FROM kafka)
"""


@dataclass
class JobConfig:
    """Settings both jobs take, merged from the config file and the flags (flags win)."""

    bootstrap_servers: str | None = None
    zookeeper: str | None = None
    topics: list[str] = field(default_factory=list)
    pattern: str | None = None
    table: str | None = None
    sink_id: str = "default"
    starting_offsets: str = "earliest"
    partition_by: list[str] = field(default_factory=list)
    transform: str | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    publish_group: str | None = None
    start_zookeeper_group: str | None = None
    publish_zookeeper_group: str | None = None
    value_schema: str | None = None
    dead_letter: str | None = None
    seed_records: int = SAMPLE_RECORDS
    kafka: dict[str, str] = field(default_factory=dict)

    @property
    def embedded(self) -> bool:
        """No broker given anywhere: use the local broker and the sample data."""
        return not (self.bootstrap_servers or self.zookeeper or "bootstrap.servers" in self.kafka
                    or "zookeeper.connect" in self.kafka)


# ---- values --------------------------------------------------------------------------------------------


def parse_bool(text: str | bool, name: str) -> bool:
    if isinstance(text, bool):
        return text
    value = str(text).strip().lower()
    if value in ("true", "yes", "1"):
        return True
    if value in ("false", "no", "0"):
        return False
    raise ConfigError(f"{name}: expected true or false, got {text!r}")


def parse_positive(value: Any, name: str, zero_ok: bool = False) -> int:
    if isinstance(value, bool) or not (isinstance(value, int) or str(value).strip().isdigit()):
        raise ConfigError(f"{name}: expected a whole number, got {value!r}")
    number = int(value)
    if number < (0 if zero_ok else 1):
        raise ConfigError(f"{name}: must be {'0 or more' if zero_ok else 'at least 1'}, got {number}")
    return number


def parse_count(value: Any, name: str) -> int:
    return parse_positive(value, name, zero_ok=True)


def parse_names(value: Any, name: str) -> list[str]:
    """A list of names from a TOML array or a comma-separated string."""
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = value
    else:
        raise ConfigError(f"{name}: expected a list of names or a comma-separated string, got {value!r}")
    return [v.strip() for v in items if v.strip()]


def parse_starting(value: Any, name: str) -> str:
    text = str(value).strip().lower()
    if text in ("earliest", "latest") or (text.isdigit() and not isinstance(value, bool)):
        return text
    raise ConfigError(f"{name}: expected earliest, latest or a time in epoch milliseconds, got {value!r}")


def parse_text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name}: expected a non-empty string, got {value!r}")
    return value.strip()


def _property(value: Any, name: str) -> str:
    # Java-style properties are strings; TOML's true/false must read as Kafka's lowercase words.
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float | str):
        return str(value)
    raise ConfigError(f"{name}: expected a string, number or boolean, got {value!r}")


Parser = Callable[[Any, str], Any]
# Config file key -> (config attribute, parser). The keys are the flag names.
COMMON_KEYS: dict[str, tuple[str, Parser]] = {
    "bootstrap-servers": ("bootstrap_servers", parse_text),
    "zookeeper": ("zookeeper", parse_text),
    "topics": ("topics", parse_names),
    "pattern": ("pattern", parse_text),
    "table": ("table", parse_text),
    "sink-id": ("sink_id", parse_text),
    "starting-offsets": ("starting_offsets", parse_starting),
    "partition-by": ("partition_by", parse_names),
    "transform": ("transform", parse_text),
    "fail-on-data-loss": ("fail_on_data_loss", parse_bool),
    "include-headers": ("include_headers", parse_bool),
    "publish-group": ("publish_group", parse_text),
    "start-zookeeper-group": ("start_zookeeper_group", parse_text),
    "publish-zookeeper-group": ("publish_zookeeper_group", parse_text),
    "value-schema": ("value_schema", parse_text),
    "dead-letter": ("dead_letter", parse_text),
    "seed-records": ("seed_records", parse_count),
}


# ---- configuration -------------------------------------------------------------------------------------


def config_path(name: str) -> Path:
    """The --config file as given, else the file of that name in the repository's conf/ directory."""
    path = Path(name).expanduser()
    if path.is_file():
        return path
    in_conf = REPO / "conf" / name
    if not path.is_absolute() and in_conf.is_file():
        return in_conf
    raise ConfigError(f"--config: no such file: {name}")


def read_config_file(name: str, config: JobConfig, keys: Mapping[str, tuple[str, Parser]]) -> JobConfig:
    """Parse a TOML config file into `config`; unknown keys and wrong types are errors that name the key."""
    path = config_path(name)
    if tomllib is None:
        raise ConfigError("--config needs Python 3.11 or later (tomllib)")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    for key, value in raw.items():
        norm = key.replace("_", "-")
        if norm == "kafka":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [kafka] must be a table of client properties")
            config.kafka = {str(k): _property(v, f"{path}: kafka.{k}") for k, v in value.items()}
            continue
        if norm not in keys:
            close = difflib.get_close_matches(norm, [*keys, "kafka"], n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(keys)}, [kafka]"
            raise ConfigError(f"{path}: unknown key {key!r}{hint}")
        attr, parse = keys[norm]
        setattr(config, attr, parse(value, f"{path}: {key}"))
    return config


def add_common_arguments(p: argparse.ArgumentParser, conf_file: str) -> None:
    """The flags both jobs take (each also a key of the --config file)."""
    p.add_argument("--config", metavar="FILE", help=f"a TOML file with these settings (see conf/{conf_file})")
    p.add_argument("--bootstrap-servers", "-b", metavar="HOST:PORT,...", help="the Kafka brokers to bootstrap from")
    p.add_argument("--zookeeper", metavar="HOST:PORT,...[/CHROOT]",
                   help="a ZooKeeper-mode cluster's ZooKeeper, to discover its brokers from (zookeeper.connect)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--topics", metavar="T1,T2", help="comma-separated topics to load")
    what.add_argument("--pattern", metavar="REGEX",
                      help="load every topic this regular expression finds a match in, as Spark's subscribePattern")
    p.add_argument("--table", metavar="PATH|NAME",
                   help="the Delta table, created by the first run: a directory, a store URI (s3a://bucket/t, "
                        "abfss://..., gs://..., hdfs://...), or a catalog name (db.table or catalog.db.table)")
    p.add_argument("--sink-id", metavar="ID", help="names this pipeline's offsets in the table (default: default)")
    p.add_argument("--starting-offsets", metavar="WHERE",
                   help="where a table new to this sink starts: earliest (default), latest, or epoch milliseconds")
    p.add_argument("--partition-by", metavar="C1,C2", help="partition the table by these output columns")
    p.add_argument("--transform", metavar="SQL|MODULE:FUNC",
                   help="a SQL SELECT over the view `kafka`, or module:function taking and returning a DataFrame")
    p.add_argument("--fail-on-data-loss", metavar="true|false",
                   help="fail when offsets were deleted before they were loaded (default true)")
    p.add_argument("--include-headers", metavar="true|false", help="keep the records' headers column")
    p.add_argument("--publish-group", metavar="GROUP",
                   help="after each commit, also commit the offsets to this consumer group (for lag tools)")
    p.add_argument("--start-zookeeper-group", metavar="GROUP",
                   help="a table new to this sink starts where this old consumer group's offsets in ZooKeeper "
                        "stand (/consumers/GROUP/offsets; --starting-offsets for partitions it has none of)")
    p.add_argument("--publish-zookeeper-group", metavar="GROUP",
                   help="after each commit, also write the offsets to ZooKeeper as old consumers did "
                        "(/consumers/GROUP/offsets/TOPIC/PARTITION)")
    p.add_argument("--value-schema", metavar="DDL",
                   help="parse each value as JSON with this Spark DDL schema into the column `data`; a value that "
                        "does not parse fails the run, naming its offset (see --dead-letter)")
    p.add_argument("--dead-letter", metavar="PATH",
                   help="with --value-schema: write records whose value does not parse to this Delta table, with "
                        "their offsets and the error, and load the rest")
    p.add_argument("-X", dest="kafka", action="append", default=[], metavar="KEY=VALUE",
                   help="a Kafka client property, repeatable (e.g. -X security.protocol=SASL_SSL)")
    p.add_argument("--seed-records", metavar="N",
                   help=f"sample records to seed an empty local topic with (default {SAMPLE_RECORDS}; no broker only)")


def parse_config(parser: argparse.ArgumentParser, argv: Sequence[str] | None, config: JobConfig,
                 keys: Mapping[str, tuple[str, Parser]]) -> tuple[JobConfig, argparse.Namespace]:
    """The run's settings: the --config file, then the flags over it (each flag is named like its key)."""
    args = parser.parse_args(argv)
    if args.config:
        read_config_file(args.config, config, keys)
    for key, (attr, parse) in keys.items():
        value = getattr(args, key.replace("-", "_"), None)
        if value is None:
            continue
        setattr(config, attr, parse(value, f"--{key}"))
        # A topic selection on the command line replaces the file's, whichever kind it was.
        if key == "topics":
            config.pattern = None
        elif key == "pattern":
            config.topics = []
    for item in args.kafka:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"-X: expected KEY=VALUE, got {item!r}")
        config.kafka[key.strip()] = value
    return config, args


def validate(config: JobConfig) -> None:
    """Fail before Spark or a broker starts on anything that can be checked offline."""
    if config.topics and config.pattern:
        raise ConfigError("give topics or a pattern, not both")
    if not config.embedded:
        if not config.topics and not config.pattern:
            raise ConfigError("give --topics or --pattern (which topics to load)")
        if not config.table:
            raise ConfigError("give --table (the Delta table to load into)")
    if config.pattern:
        try:
            re.compile(config.pattern)
        except re.error as exc:
            raise ConfigError(f"pattern {config.pattern!r} is not a regular expression: {exc}") from None
    check_sink_id(config.sink_id)
    require_schema(config.dead_letter, config.value_schema)
    # The client settings are checked now; the embedded broker's address is not known yet, so stand one in.
    props = client_properties(config)
    if "bootstrap.servers" not in props and "zookeeper.connect" not in props:
        props["bootstrap.servers"] = "localhost:9092"
    ClientConfig(props)
    if (config.start_zookeeper_group or config.publish_zookeeper_group) and "zookeeper.connect" not in props:
        raise ConfigError("--start-zookeeper-group and --publish-zookeeper-group need --zookeeper (the ZooKeeper "
                          "that holds the group's offsets)")


def client_properties(config: JobConfig) -> dict[str, str]:
    props = dict(config.kafka)
    if config.bootstrap_servers:
        props["bootstrap.servers"] = config.bootstrap_servers
    if config.zookeeper:
        props["zookeeper.connect"] = config.zookeeper
    return props


def resolve_transform(text: str | None) -> Callable[[Any], Any] | None:
    """The transform as a DataFrame -> DataFrame function; a module path is imported now, to fail early."""
    if text is None:
        return None
    if text.lower().startswith(("select", "with")):
        # The view is registered under the name the query uses, so the query runs exactly as written.
        def run_sql(df: Any) -> Any:
            df.createOrReplaceTempView("kafka")
            return df.sparkSession.sql(text)

        return run_sql
    module, sep, name = text.partition(":")
    if not sep or not module or not name:
        raise ConfigError(f"transform {text!r}: expected a SQL SELECT over the view `kafka`, or module:function")
    try:
        func = getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise ConfigError(f"transform {text!r}: cannot import {module}: {exc}") from None
    except AttributeError:
        raise ConfigError(f"transform {text!r}: module {module} has no {name!r}") from None
    if not callable(func):
        raise ConfigError(f"transform {text!r}: {module}.{name} is not a function")
    return func


def table_location(table: str) -> str:
    """The table as the sink takes it: a catalog name (`db.table`) or a store URI as given, a local path
    (or `file:` URI) made absolute."""
    if is_table_name(table):
        return table.strip()
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", table)
    if scheme and scheme.group(1).lower() != "file":
        return table
    return str(Path(table.removeprefix("file:")).expanduser().resolve())


# ---- messages ------------------------------------------------------------------------------------------


class Notes:
    """Progress notes on stderr, prefixed with the job's name; silent for --json runs (spark-submit merges
    the driver's stderr into its stdout, and the JSON must stand alone)."""

    def __init__(self, prog: str, quiet: bool = False) -> None:
        self.prog = prog
        self.quiet = quiet

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(f"{self.prog}: {text}", file=sys.stderr, flush=True)


# ---- the embedded default: local broker and sample data -------------------------------------------------


def start_local_broker(note: Notes) -> tuple[str, bool]:
    """The local broker's address, starting it unless it runs; and whether it was started now."""
    from kafka_spark.local import daemon

    if daemon.status() is None:
        note("starting the local Kafka broker (it keeps running after this job)...")
    broker, started = daemon.start()
    if not started and not daemon.responding(broker):
        raise ConfigError(f"the local broker (pid {broker.pid}) does not answer at {broker.bootstrap}; "
                          f"restart it: {STOP_HINT}, then run again")
    note(f"{'started' if started else 'using'} the local Kafka broker at {broker.bootstrap}")
    return broker.bootstrap, started


_PAGES = ["/", "/pricing", "/docs", "/docs/quickstart", "/docs/delta-sink", "/blog", "/blog/exactly-once",
          "/blog/kafka-offsets", "/signup", "/login", "/account", "/search", "/about", "/careers",
          *(f"/product/{n}" for n in range(1, 41))]
_REFERRERS = [None, None, "https://www.google.com/", "https://news.ycombinator.com/", "https://twitter.com/",
              "https://www.linkedin.com/", "https://github.com/", "https://duckduckgo.com/"]


class PageViews:
    """Page views by a few thousand users, a few far more active than most, as in real traffic."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.users = [f"user-{n:05d}" for n in range(5000)]
        self.weights = [1.0 / (n + 10) for n in range(len(self.users))]
        self.pages = [json.dumps(p) for p in _PAGES]
        self.referrers = [json.dumps(r) for r in _REFERRERS]

    def record(self, user: str, ts: int) -> tuple[bytes, bytes, int]:
        rng = self.rng
        value = (f'{{"user":"{user}","page":{self.pages[int(rng.random() ** 2 * len(self.pages))]},'
                 f'"referrer":{rng.choice(self.referrers)},"ts":{ts},'
                 f'"duration_ms":{int(rng.expovariate(1 / 9000))}}}')
        return user.encode(), value.encode(), ts

    def history(self, count: int, step_ms: int = 15) -> list[tuple[bytes, bytes, int]]:
        """(key, JSON value, timestamp ms) of `count` views, `step_ms` apart on average, ending now."""
        start_ms = int(time.time() * 1000) - count * step_ms
        users = self.rng.choices(self.users, self.weights, k=count)
        return [self.record(u, start_ms + i * step_ms + self.rng.randrange(step_ms)) for i, u in enumerate(users)]

    def now(self, count: int) -> list[tuple[bytes, bytes, int]]:
        """`count` views stamped with the current time."""
        ts = int(time.time() * 1000)
        return [self.record(u, ts) for u in self.rng.choices(self.users, self.weights, k=count)]


def sample_records(count: int, seed: int = 7) -> list[tuple[bytes, bytes, int]]:
    """(key, JSON value, timestamp ms) of `count` sample page views, ending now."""
    return PageViews(seed).history(count)


PRODUCER_SETTINGS = {"compression.type": "lz4", "linger.ms": 50, "batch.size": 262144}


def seed_sample(bootstrap: str, records: int, note: Notes) -> int:
    """Fill the sample topic unless it already has records; return how many were produced."""
    from kafka_spark.local import KafkaTools

    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        if SAMPLE_TOPIC in client.topics():
            if any(client.latest_offsets(client.partitions(SAMPLE_TOPIC)).values()):
                return 0
        else:
            KafkaTools("kafka4", bootstrap).create_topic(SAMPLE_TOPIC, SAMPLE_PARTITIONS)
    if records == 0:
        return 0
    started = time.monotonic()
    note(f"seeding topic {SAMPLE_TOPIC!r} with {records:,} sample page views...")
    with Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS}) as producer:
        futures = [producer.send(SAMPLE_TOPIC, value, key=key, timestamp_ms=ts)
                   for key, value, ts in sample_records(records)]
        producer.flush()
        for future in futures:
            future.get()
    note(f"seeded {records:,} records in {time.monotonic() - started:.1f}s")
    return records


# ---- Spark ---------------------------------------------------------------------------------------------


class LazySpark:
    """A SparkSession made on first use, so a run with nothing to write (up to date, or refused while
    planning) never waits for Spark. `prestart()` begins making it on a thread, to overlap the JVM's
    start with other work."""

    def __init__(self, app_name: str) -> None:
        self.app_name = app_name
        self._session: Any = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def prestart(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._make, name="spark-start", daemon=True)
                self._thread.start()

    def _make(self) -> None:
        try:
            self._session = spark_session(self.app_name)
        except BaseException as exc:
            self._error = exc

    def session(self) -> Any:
        self.prestart()
        assert self._thread is not None
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._session

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session(), name)


def spark_session(app_name: str) -> Any:
    # spark-submit runs this driver with a JVM gateway; plain `python` gets the project's local session.
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        from pyspark import SparkConf
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName(app_name)
        # Spark's start-up INFO lines would bury the job's output; a --conf spark.log.level still wins.
        if not SparkConf().contains("spark.log.level"):
            builder = builder.config("spark.log.level", os.environ.get("KAFKA_SPARK_SPARK_LOG_LEVEL", "WARN"))
        return builder.getOrCreate()
    from kafka_spark.local.spark import local_spark

    return local_spark(app_name)


# ---- errors --------------------------------------------------------------------------------------------

_RAISED = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?([A-Z]\w*(?:Error|Exception|Exit)): (.+)$")


def error_line(exc: BaseException) -> str:
    """One line that says what went wrong, also for errors raised on an executor and carried by Spark."""
    if isinstance(exc, KafkaSparkError):
        return str(exc)
    text = str(exc)
    try:
        from py4j.protocol import Py4JJavaError

        if isinstance(exc, Py4JJavaError):
            text = str(exc.java_exception.toString())
    except ImportError:
        pass
    lines = [line for line in text.splitlines() if line.strip()]
    # A Python worker's failure arrives as its whole traceback; its last `Name: message` line is the cause.
    raised = [m for m in map(_RAISED.match, lines) if m]
    ours = [m for m in raised if "kafka_spark" in m.group(0)]
    if ours or raised:
        m = (ours or raised)[-1]
        return f"{m.group(1)}: {m.group(2).strip()}"
    return lines[0].strip() if lines else type(exc).__name__


def expected_errors() -> tuple[type[BaseException], ...]:
    """Errors that are the data's or the settings' fault: reported in one line, with no traceback."""
    kinds: list[type[BaseException]] = [KafkaSparkError]
    try:
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException

        kinds += [PySparkException, Py4JJavaError]
    except ImportError:
        pass
    return tuple(kinds)


def run_main(prog: str, read_config: Callable[[Sequence[str] | None], tuple[Any, argparse.Namespace]],
             run: Callable[[Any, bool], int], argv: Sequence[str] | None) -> int:
    """Read a job's settings and run it; settings and data errors become one line and exit 2 (settings)
    or 1."""
    try:
        config, args = read_config(argv)
        return run(config, args.json)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except expected_errors() as exc:
        print(f"{prog}: error: {' '.join(error_line(exc).split())}", file=sys.stderr)
        return 2 if isinstance(exc, ConfigError) else 1


# ---- where the records come from -----------------------------------------------------------------------


@dataclass
class Source:
    """The brokers, topics and transform a run reads with, the embedded default filled in."""

    kafka: dict[str, str]
    topics: list[str]
    transform: Callable[[Any], Any] | None
    bootstrap: str
    embedded: bool
    seeded: int = 0


def sink_settings(config: JobConfig, source: Source, table: str) -> dict[str, Any]:
    """The `LoadOptions` fields both jobs take from their settings (a stream adds its trigger and limits)."""
    return {"table": table, "kafka": source.kafka, "topics": source.topics, "pattern": config.pattern,
            "sink_id": config.sink_id, "starting": config.starting_offsets,
            "fail_on_data_loss": config.fail_on_data_loss, "partition_by": config.partition_by,
            "transform": source.transform, "include_headers": config.include_headers,
            "publish_group": config.publish_group, "start_zookeeper_group": config.start_zookeeper_group,
            "publish_zookeeper_group": config.publish_zookeeper_group, "value_schema": config.value_schema,
            "dead_letter": table_location(config.dead_letter) if config.dead_letter else None}


def resolve_source(config: JobConfig, table: str, note: Notes, spark: LazySpark,
                   has_position: Callable[[], bool]) -> Source:
    """The run's source; with no broker given, the local broker, seeded with the sample if it is empty."""
    transform = resolve_transform(config.transform)
    kafka = client_properties(config)
    topics = list(config.topics)
    if not config.embedded:
        where = kafka.get("bootstrap.servers") or f"zookeeper {kafka['zookeeper.connect']}"
        return Source(kafka, topics, transform, where, embedded=False)
    spark.prestart()
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
            transform = resolve_transform(SAMPLE_TRANSFORM.strip())
    return Source(kafka, topics, transform, bootstrap, embedded=True, seeded=seeded)


# ---- output --------------------------------------------------------------------------------------------


def offset_lines(prog: str, start: Mapping[Any, int], end: Mapping[Any, int], limit: int = 24) -> list[str]:
    """One line per topic partition: the next offset to load, and where it moved from."""
    tps = sorted(end)
    width = max([len(tp.topic) for tp in tps] + [5])
    lines = []
    for tp in tps[:limit]:
        to = end[tp]
        if tp in start and start[tp] != to:
            moved = f"{start[tp]:>12,} -> {to:>12,}  (+{to - start[tp]:,})"
        else:
            moved = f"{'':>12}    {to:>12,}"
        lines.append(f"    {tp.topic:<{width}} {tp.partition:>4}  {moved}")
    if len(tps) > limit:
        lines.append(f"    ... and {len(tps) - limit} more partitions (all: {prog} --json)")
    return lines


def print_embedded(source: Source, table: str) -> None:
    """Where the embedded demo's broker is, and how to see the table's lag against it."""
    if source.seeded:
        print(f"  seeded     {source.seeded:,} sample records into topic {SAMPLE_TOPIC!r}")
    print(f"  broker     {source.bootstrap} (local, still running; stop it with: {STOP_HINT})")
    print(f"  lag        .venv/bin/kafka-spark delta-offsets {table} -b {source.bootstrap}")
