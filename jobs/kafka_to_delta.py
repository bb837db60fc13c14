"""Load Kafka topics into a Delta table, committing the Kafka offsets in the same Delta transaction as the rows.

    ./spark-submit.sh jobs/kafka_to_delta.py          # demo: local broker, sample page views, data/page_views
    ./spark-submit.sh jobs/kafka_to_delta.py --bootstrap-servers host:9092 --topics orders --table /lake/orders
    ./spark-submit.sh jobs/kafka_to_delta.py --config conf/kafka-to-delta.toml --max-records 1000000

Each run loads what is new since the offsets the table has committed (at most --max-records) in one Delta
commit, so a run that fails or is killed is simply run again. Flags override the --config file. With no
broker given, the job starts (or reuses) the local broker of `kafka-spark local start` and seeds it with
a sample page-view stream if that topic is empty.
"""

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_spark.client import ClientConfig, KafkaClient, Producer
from kafka_spark.delta import LoadOptions, LoadResult, OffsetsMovedBackwardsError, committed_position, load
from kafka_spark.delta.position import check_sink_id
from kafka_spark.errors import ConfigError, KafkaSparkError

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: everything but --config still works
    tomllib = None  # type: ignore[assignment]

PROG = "kafka-to-delta"
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
    """The settings of one run, merged from the config file and the flags (flags win)."""

    bootstrap_servers: str | None = None
    topics: list[str] = field(default_factory=list)
    pattern: str | None = None
    table: str | None = None
    sink_id: str = "default"
    starting_offsets: str = "earliest"
    max_records: int | None = None
    partition_by: list[str] = field(default_factory=list)
    transform: str | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    publish_group: str | None = None
    seed_records: int = SAMPLE_RECORDS
    kafka: dict[str, str] = field(default_factory=dict)

    @property
    def embedded(self) -> bool:
        """No broker given anywhere: use the local broker and the sample data."""
        return not self.bootstrap_servers and "bootstrap.servers" not in self.kafka


# ---- configuration ------------------------------------------------------------------------------------


def _bool(text: str | bool, name: str) -> bool:
    if isinstance(text, bool):
        return text
    value = str(text).strip().lower()
    if value in ("true", "yes", "1"):
        return True
    if value in ("false", "no", "0"):
        return False
    raise ConfigError(f"{name}: expected true or false, got {text!r}")


def _positive(value: Any, name: str, zero_ok: bool = False) -> int:
    if isinstance(value, bool) or not (isinstance(value, int) or str(value).strip().isdigit()):
        raise ConfigError(f"{name}: expected a whole number, got {value!r}")
    number = int(value)
    if number < (0 if zero_ok else 1):
        raise ConfigError(f"{name}: must be {'0 or more' if zero_ok else 'at least 1'}, got {number}")
    return number


def _names(value: Any, name: str) -> list[str]:
    """A list of names from a TOML array or a comma-separated string."""
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = value
    else:
        raise ConfigError(f"{name}: expected a list of names or a comma-separated string, got {value!r}")
    return [v.strip() for v in items if v.strip()]


def _starting(value: Any, name: str) -> str:
    text = str(value).strip().lower()
    if text in ("earliest", "latest") or (text.isdigit() and not isinstance(value, bool)):
        return text
    raise ConfigError(f"{name}: expected earliest, latest or a time in epoch milliseconds, got {value!r}")


def _text(value: Any, name: str) -> str:
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


# Config file key -> (JobConfig attribute, parser). The keys are the flag names.
FILE_KEYS: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "bootstrap-servers": ("bootstrap_servers", _text),
    "topics": ("topics", _names),
    "pattern": ("pattern", _text),
    "table": ("table", _text),
    "sink-id": ("sink_id", _text),
    "starting-offsets": ("starting_offsets", _starting),
    "max-records": ("max_records", _positive),
    "partition-by": ("partition_by", _names),
    "transform": ("transform", _text),
    "fail-on-data-loss": ("fail_on_data_loss", _bool),
    "include-headers": ("include_headers", _bool),
    "publish-group": ("publish_group", _text),
    "seed-records": ("seed_records", lambda v, n: _positive(v, n, zero_ok=True)),
}


def config_path(name: str) -> Path:
    """The --config file as given, else the file of that name in the repository's conf/ directory."""
    path = Path(name).expanduser()
    if path.is_file():
        return path
    in_conf = REPO / "conf" / name
    if not path.is_absolute() and in_conf.is_file():
        return in_conf
    raise ConfigError(f"--config: no such file: {name}")


def read_config_file(name: str) -> JobConfig:
    """Parse a TOML config file; unknown keys and wrong types are errors that name the key."""
    path = config_path(name)
    if tomllib is None:
        raise ConfigError("--config needs Python 3.11 or later (tomllib)")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    config = JobConfig()
    for key, value in raw.items():
        norm = key.replace("_", "-")
        if norm == "kafka":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [kafka] must be a table of client properties")
            config.kafka = {str(k): _property(v, f"{path}: kafka.{k}") for k, v in value.items()}
            continue
        if norm not in FILE_KEYS:
            close = difflib.get_close_matches(norm, [*FILE_KEYS, "kafka"], n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(FILE_KEYS)}, [kafka]"
            raise ConfigError(f"{path}: unknown key {key!r}{hint}")
        attr, parse = FILE_KEYS[norm]
        setattr(config, attr, parse(value, f"{path}: {key}"))
    return config


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Load Kafka topics into a Delta table; the Kafka offsets are committed in the same Delta "
                    "transaction as the rows, so every run resumes exactly where the last commit ended.",
        epilog="With no broker (no --bootstrap-servers, none in --config) the job starts or reuses the local "
               f"broker, seeds topic {SAMPLE_TOPIC!r} with sample page views if it is empty, and loads it into "
               f"{SAMPLE_TABLE.relative_to(REPO)}/. Stop that broker with: {STOP_HINT}")
    p.add_argument("--config", metavar="FILE", help="a TOML file with these settings (see conf/kafka-to-delta.toml)")
    p.add_argument("--bootstrap-servers", "-b", metavar="HOST:PORT,...", help="the Kafka brokers to bootstrap from")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--topics", metavar="T1,T2", help="comma-separated topics to load")
    what.add_argument("--pattern", metavar="REGEX", help="load every topic fully matching this regular expression")
    p.add_argument("--table", metavar="PATH", help="the Delta table (a directory; created by the first run)")
    p.add_argument("--sink-id", metavar="ID", help="names this pipeline's offsets in the table (default: default)")
    p.add_argument("--starting-offsets", metavar="WHERE",
                   help="where a table new to this sink starts: earliest (default), latest, or epoch milliseconds")
    p.add_argument("--max-records", metavar="N", help="load at most N offsets in this run (default: all new ones)")
    p.add_argument("--partition-by", metavar="C1,C2", help="partition the table by these output columns")
    p.add_argument("--transform", metavar="SQL|MODULE:FUNC",
                   help="a SQL SELECT over the view `kafka`, or module:function taking and returning a DataFrame")
    p.add_argument("--fail-on-data-loss", metavar="true|false",
                   help="fail when offsets were deleted before they were loaded (default true)")
    p.add_argument("--include-headers", metavar="true|false", help="keep the records' headers column")
    p.add_argument("--publish-group", metavar="GROUP",
                   help="after each commit, also commit the offsets to this consumer group (for lag tools)")
    p.add_argument("-X", dest="kafka", action="append", default=[], metavar="KEY=VALUE",
                   help="a Kafka client property, repeatable (e.g. -X security.protocol=SASL_SSL)")
    p.add_argument("--seed-records", metavar="N",
                   help=f"sample records to seed an empty local topic with (default {SAMPLE_RECORDS}; no broker only)")
    p.add_argument("--json", action="store_true",
                   help="print only the run's summary, as one line of JSON (no progress display)")
    return p


def parse_config(argv: Sequence[str] | None) -> tuple[JobConfig, argparse.Namespace]:
    """The run's settings: the --config file, then the flags over it."""
    args = build_parser().parse_args(argv)
    config = read_config_file(args.config) if args.config else JobConfig()
    flags = {
        "bootstrap-servers": args.bootstrap_servers, "topics": args.topics, "pattern": args.pattern,
        "table": args.table, "sink-id": args.sink_id, "starting-offsets": args.starting_offsets,
        "max-records": args.max_records, "partition-by": args.partition_by, "transform": args.transform,
        "fail-on-data-loss": args.fail_on_data_loss, "include-headers": args.include_headers,
        "publish-group": args.publish_group, "seed-records": args.seed_records,
    }
    for key, value in flags.items():
        if value is None:
            continue
        attr, parse = FILE_KEYS[key]
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
    # The client settings are checked now; the embedded broker's address is not known yet, so stand one in.
    ClientConfig({**client_properties(config), "bootstrap.servers": config.bootstrap_servers
                  or config.kafka.get("bootstrap.servers") or "localhost:9092"})


def client_properties(config: JobConfig) -> dict[str, str]:
    props = dict(config.kafka)
    if config.bootstrap_servers:
        props["bootstrap.servers"] = config.bootstrap_servers
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
    """The table as an absolute local path: the sink reads its committed offsets from the table's files."""
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):", table)
    if scheme and scheme.group(1).lower() != "file":
        raise ConfigError(f"table {table!r}: only local (or locally mounted) paths are supported, "
                          "because the committed offsets are read from the table's directory")
    return str(Path(table.removeprefix("file:")).expanduser().resolve())


# ---- the embedded default: local broker and sample data -------------------------------------------------


# With --json the summary is the only output: spark-submit merges the driver's stderr into its stdout.
_quiet = False


def note(text: str) -> None:
    if not _quiet:
        print(f"{PROG}: {text}", file=sys.stderr, flush=True)


def start_local_broker() -> tuple[str, bool]:
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


def sample_records(count: int, seed: int = 7) -> list[tuple[bytes, bytes, int]]:
    """(key, JSON value, timestamp ms) of `count` page views by a few thousand users, ending now."""
    rng = random.Random(seed)
    pages = ["/", "/pricing", "/docs", "/docs/quickstart", "/docs/delta-sink", "/blog", "/blog/exactly-once",
             "/blog/kafka-offsets", "/signup", "/login", "/account", "/search", "/about", "/careers",
             *(f"/product/{n}" for n in range(1, 41))]
    referrers = [None, None, "https://www.google.com/", "https://news.ycombinator.com/", "https://twitter.com/",
                 "https://www.linkedin.com/", "https://github.com/", "https://duckduckgo.com/"]
    users = [f"user-{n:05d}" for n in range(5000)]
    # A few users are far more active than most, as in real traffic.
    weights = [1.0 / (n + 10) for n in range(len(users))]
    page_json = [json.dumps(p) for p in pages]
    referrer_json = [json.dumps(r) for r in referrers]
    step_ms = 15
    start_ms = int(time.time() * 1000) - count * step_ms
    out = []
    for i, user in enumerate(rng.choices(users, weights, k=count)):
        ts = start_ms + i * step_ms + rng.randrange(step_ms)
        value = (f'{{"user":"{user}","page":{page_json[int(rng.random() ** 2 * len(pages))]},'
                 f'"referrer":{rng.choice(referrer_json)},"ts":{ts},"duration_ms":{int(rng.expovariate(1 / 9000))}}}')
        out.append((user.encode(), value.encode(), ts))
    return out


def seed_sample(bootstrap: str, records: int) -> int:
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
    props = {"bootstrap.servers": bootstrap, "compression.type": "lz4", "linger.ms": 50, "batch.size": 262144}
    with Producer(props) as producer:
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

    def __init__(self) -> None:
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
            self._session = _spark_session()
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


def _spark_session() -> Any:
    # spark-submit runs this driver with a JVM gateway; plain `python` gets the project's local session.
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        from pyspark import SparkConf
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName(PROG)
        # Spark's start-up INFO lines would bury the job's output; a --conf spark.log.level still wins.
        if not SparkConf().contains("spark.log.level"):
            builder = builder.config("spark.log.level", os.environ.get("KAFKA_SPARK_SPARK_LOG_LEVEL", "WARN"))
        return builder.getOrCreate()
    from kafka_spark.local.spark import local_spark

    return local_spark(PROG)


# ---- output --------------------------------------------------------------------------------------------


def _offset_lines(result: LoadResult, limit: int = 24) -> list[str]:
    tps = sorted(result.offsets)
    width = max([len(tp.topic) for tp in tps] + [5])
    lines = []
    for tp in tps[:limit]:
        end = result.offsets[tp]
        if tp in result.start and result.start[tp] != end:
            moved = f"{result.start[tp]:>12,} -> {end:>12,}  (+{end - result.start[tp]:,})"
        else:
            moved = f"{'':>12}    {end:>12,}"
        lines.append(f"    {tp.topic:<{width}} {tp.partition:>4}  {moved}")
    if len(tps) > limit:
        lines.append(f"    ... and {len(tps) - limit} more partitions (all: {PROG} --json)")
    return lines


def print_summary(config: JobConfig, embedded: bool, table: str, result: LoadResult, bootstrap: str,
                  seeded: int) -> None:
    if result.status == "up-to-date":
        print(f"{PROG}: {table} is up to date (sink {result.sink_id!r}, batch {result.batch}); "
              f"no new records, nothing written ({result.seconds:.1f}s)")
    else:
        print(f"{PROG}: committed batch {result.batch} of sink {result.sink_id!r} to {table} "
              f"(Delta version {result.table_version})")
        print(f"  rows       {result.rows:,} in {result.seconds:.1f}s ({result.records_per_second:,.0f} records/s)")
    print("  offsets    next offset to load, per topic partition" + (" (from -> to)" if result.rows else ""))
    for line in _offset_lines(result):
        print(line)
    if result.lost:
        lost = ", ".join(f"{tp}: {n:,}" for tp, n in sorted(result.lost.items()))
        print(f"  warning    offsets deleted by retention before they were loaded, skipped: {lost}")
    if config.publish_group and result.status == "committed":
        print(f"  group      offsets also committed to consumer group {config.publish_group!r}")
    if embedded:
        if seeded:
            print(f"  seeded     {seeded:,} sample records into topic {SAMPLE_TOPIC!r}")
        print(f"  broker     {bootstrap} (local, still running; stop it with: {STOP_HINT})")
        print(f"  lag        .venv/bin/kafka-spark delta-offsets {table} -b {bootstrap}")


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


# ---- main ----------------------------------------------------------------------------------------------


def run(config: JobConfig, as_json: bool) -> int:
    global _quiet
    _quiet = as_json
    validate(config)
    transform = resolve_transform(config.transform)
    started = time.monotonic()
    spark = LazySpark()
    embedded, seeded = config.embedded, 0
    kafka = client_properties(config)
    topics = list(config.topics)
    table = table_location(config.table or str(SAMPLE_TABLE))
    if embedded:
        spark.prestart()
        bootstrap, fresh = start_local_broker()
        kafka["bootstrap.servers"] = bootstrap
        if fresh and committed_position(table, config.sink_id) is not None:
            note(f"the broker was started fresh (its topics do not survive `local stop`), but {table} holds "
                 "offsets loaded from an earlier one")
        if not topics and not config.pattern:
            topics = [SAMPLE_TOPIC]
        if SAMPLE_TOPIC in topics:
            seeded = seed_sample(bootstrap, config.seed_records)
            if transform is None and topics == [SAMPLE_TOPIC]:
                transform = resolve_transform(SAMPLE_TRANSFORM.strip())
    else:
        bootstrap = kafka["bootstrap.servers"]
    options = LoadOptions(
        table=table, kafka=kafka, topics=topics, pattern=config.pattern,
        sink_id=config.sink_id, starting=config.starting_offsets, max_records=config.max_records,
        fail_on_data_loss=config.fail_on_data_loss, partition_by=config.partition_by, transform=transform,
        include_headers=config.include_headers, publish_group=config.publish_group, progress=not as_json,
    )
    try:
        result = load(spark, options)
    except OffsetsMovedBackwardsError as exc:
        if embedded:
            raise OffsetsMovedBackwardsError(f"{exc} (demo: delete {table} to start over)") from None
        raise
    if as_json:
        print(json.dumps({**result.summary(), "table": table, "bootstrap": bootstrap, "embedded": embedded,
                          "seeded": seeded, "elapsed_seconds": round(time.monotonic() - started, 3)}))
    else:
        print_summary(config, embedded, table, result, bootstrap, seeded)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        config, args = parse_config(argv)
        return run(config, args.json)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except expected_errors() as exc:
        print(f"{PROG}: error: {' '.join(error_line(exc).split())}", file=sys.stderr)
        return 2 if isinstance(exc, ConfigError) else 1


if __name__ == "__main__":
    sys.exit(main())
