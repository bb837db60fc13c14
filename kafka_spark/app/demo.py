"""The demo's feed: the local broker of `kafka-spark local`, sample page views to seed it with, and a
thread that keeps producing them while a stream runs."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable

from kafka_spark.client import KafkaClient, NewTopic, Producer, create_topics
from kafka_spark.errors import ConfigError

SAMPLE_TOPIC = "page_views"
SAMPLE_PARTITIONS = 6
STOP_HINT = "kafka-spark local stop"
PRODUCER_SETTINGS = {"compression.type": "lz4", "linger.ms": 50, "batch.size": 262144}

# The sample's JSON value as columns; the Kafka coordinates stay so every row can be traced to its record.
SAMPLE_TRANSFORM = """
SELECT e.user, e.page, e.referrer, timestamp_millis(e.ts) AS event_time, e.duration_ms,
       topic, partition, offset, timestamp
FROM (SELECT from_json(CAST(value AS STRING),
                       'user STRING, page STRING, referrer STRING, ts BIGINT, duration_ms INT') AS e,
             topic, partition, offset, timestamp
      FROM kafka)
""".strip()

Note = Callable[[str], None]


def start_local_broker(note: Note) -> tuple[str, bool]:
    """The local broker's address, starting it unless it runs; and whether it was started now."""
    from kafka_spark.local import broker_daemon as daemon

    if daemon.status() is None:
        note("starting the local Kafka broker (it keeps running after this run)...")
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


def seed_sample(bootstrap: str, records: int, note: Note) -> int:
    """Fill the sample topic unless it already has records; return how many were produced."""
    with KafkaClient({"bootstrap.servers": bootstrap}) as client:
        if SAMPLE_TOPIC in client.topics():
            if any(client.latest_offsets(client.partitions(SAMPLE_TOPIC)).values()):
                return 0
        else:
            create_topics(client.cluster, [NewTopic(SAMPLE_TOPIC, SAMPLE_PARTITIONS)])
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


class SampleFeed(threading.Thread):
    """Keeps producing sample page views, `rate` a second, until stopped."""

    def __init__(self, bootstrap: str, rate: int) -> None:
        super().__init__(name="sample-feed", daemon=True)
        self.bootstrap = bootstrap
        self.rate = rate
        self.produced = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        views = PageViews(seed=int(time.time()))
        tick, owed = 0.25, 0.0
        with Producer({"bootstrap.servers": self.bootstrap, **PRODUCER_SETTINGS}) as producer:
            due = time.monotonic()
            while not self.stopping.wait(max(0.0, due - time.monotonic())):
                due += tick
                # Fractions carry over, so low rates still average out to `rate` a second.
                owed += self.rate * tick
                count, owed = int(owed), owed - int(owed)
                for key, value, ts in views.now(count):
                    producer.send(SAMPLE_TOPIC, value, key=key, timestamp_ms=ts)
                self.produced += count

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=30)
