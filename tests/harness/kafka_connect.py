"""A standalone Kafka Connect worker on 127.0.0.1 (`ConnectStandalone`) running Debezium's PostgreSQL connector,
the change-data-capture tests' source of real change events: PostgreSQL -> Debezium -> the harness's broker.

The worker and the connector share one class path (tests/harness/poms/connect.xml); plugins are found through
their ServiceLoader manifests (`plugin.discovery=service_load`), which spares the worker a scan of every jar at
start-up. Its REST listener is on a free port; source offsets go to a file in the worker's folder, flushed every
second, so a restarted worker resumes from its last flushed position as a deployed one does. Its converters are
Kafka's JsonConverter unless a test gives others, with a class path that holds them (tests/harness/apicurio.py).
"""

from __future__ import annotations

import json
import signal
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.fetch import classpath
from harness.postgres import SUPERUSER, PostgresServer
from kafka_spark.local.config import template, write_properties
from kafka_spark.local.process import ServerProcess, ServerStartError, free_port, java_argv

MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectStandalone"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"


def debezium_postgres(pg: PostgresServer, prefix: str = "dbserver1", slot: str = "debezium",
                      overrides: Mapping[str, object] | None = None) -> dict[str, object]:
    """A Debezium PostgreSQL connector's settings for `pg`'s database, as the tests use them: logical decoding by
    PostgreSQL's own `pgoutput` (no server plugin to install), an initial snapshot, decimals as strings (exact,
    and readable without the converter's schema; the default `precise` sends base64 bytes), timestamps in
    Debezium's `adaptive` mode (a `timestamp` as epoch microseconds, a `timestamptz` as an ISO-8601 string),
    truncates sent (Debezium skips them unless told), a tombstone after each delete; `overrides` over those."""
    return {
        "connector.class": POSTGRES_CONNECTOR,
        "tasks.max": 1,
        "database.hostname": "127.0.0.1",
        "database.port": pg.port,
        "database.user": SUPERUSER,
        "database.password": SUPERUSER,  # trusted on loopback: the server does not ask for it
        "database.dbname": pg.database,
        "topic.prefix": prefix,
        "plugin.name": "pgoutput",
        "slot.name": slot,
        "publication.autocreate.mode": "all_tables",
        "snapshot.mode": "initial",
        "decimal.handling.mode": "string",
        "time.precision.mode": "adaptive",
        "skipped.operations": "none",
        "tombstones.on.delete": "true",
        "poll.interval.ms": 100,
        # the worker creates the topics (replication factor 1 on the single test broker)
        "topic.creation.default.replication.factor": 1,
        "topic.creation.default.partitions": 1,
        **(overrides or {}),
    }


JSON_CONVERTERS: dict[str, object] = {
    "key.converter": JSON_CONVERTER,
    "value.converter": JSON_CONVERTER,
    # the converter's default, said here: each key and value is {"schema": ..., "payload": ...}
    "key.converter.schemas.enable": "true",
    "value.converter.schemas.enable": "true",
}


class KafkaConnect:
    """One standalone worker; `connectors` (name -> settings) start with it. `converters` are the worker's
    `key.converter*` and `value.converter*` settings (Kafka's JsonConverter with schemas unless given), `classpath`
    its class path when their jars are not on connect.xml's."""

    def __init__(self, bootstrap: str, connectors: Mapping[str, Mapping[str, object]],
                 data_dir: Path | None = None, heap: str = "384m",
                 converters: Mapping[str, object] | None = None, classpath: str | None = None) -> None:
        self.bootstrap = bootstrap
        self.connectors = {name: dict(config) for name, config in connectors.items()}
        self.converters = dict(JSON_CONVERTERS if converters is None else converters)
        self.classpath = classpath
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-connect-")).resolve()
        self.heap = heap
        self.port = 0
        self.process: ServerProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "connect.log"

    @property
    def offsets_file(self) -> Path:
        return self.data_dir / "connect.offsets"

    def worker_properties(self) -> dict[str, object]:
        return {
            "bootstrap.servers": self.bootstrap,
            **self.converters,
            "offset.storage.file.filename": self.offsets_file,
            "offset.flush.interval.ms": 1000,
            "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": self.port,
            "plugin.discovery": "service_load",
            "task.shutdown.graceful.timeout.ms": 5000,
        }

    def start(self, timeout: float = 120.0) -> KafkaConnect:
        """Start the worker with its connectors (again after crash(): from its offsets file); returns once every
        connector and its tasks run."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        worker = write_properties(self.data_dir / "worker.properties", self.worker_properties())
        configs = [str(write_properties(self.data_dir / f"{name}.properties", {"name": name, **config}))
                   for name, config in self.connectors.items()]
        log_conf = template("log4j2-server.properties", self.data_dir)
        argv = java_argv(self.classpath or classpath("connect"), MAIN_CLASS, [str(worker), *configs], heap=self.heap,
                         props=[f"-Dlog4j2.configurationFile={log_conf}"])
        self.process = ServerProcess("kafka-connect", argv, self.log_path).start()
        self.process.wait_ready(self.running, timeout)
        return self

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=5) as answer:
            return json.loads(answer.read())

    def status(self, name: str) -> dict[str, Any]:
        """The REST API's status of connector `name` (its state and its tasks')."""
        found: dict[str, Any] = self._get(f"/connectors/{name}/status")
        return found

    def running(self) -> bool:
        """Whether every connector and each of its tasks is RUNNING; a FAILED one stops the wait with its trace."""
        try:
            states = [self.status(name) for name in self.connectors]
        except (urllib.error.URLError, OSError, ValueError):
            return False
        for state in states:
            for part in [state.get("connector", {}), *state.get("tasks", [])]:
                if part.get("state") == "FAILED":
                    raise ServerStartError(f"connector {state.get('name')} failed: {part.get('trace', '')[:2000]}")
        return all(s.get("connector", {}).get("state") == "RUNNING" and s.get("tasks")
                   and all(t.get("state") == "RUNNING" for t in s["tasks"]) for s in states)

    def check_running(self) -> None:
        """Fail if the worker exited or a connector failed since it started."""
        if self.process is None or not self.process.alive():
            raise ServerStartError(f"the Connect worker is not running; log: {self.log_path}")
        deadline = time.monotonic() + 10
        while not self.running():  # a REST call may time out on a loaded machine
            if time.monotonic() > deadline:
                raise ServerStartError(f"a connector is not running; log: {self.log_path}")
            time.sleep(0.5)

    def crash(self) -> None:
        """SIGKILL the worker, as on a lost machine: the source offsets of its last second are not flushed, so
        the next start() re-sends those changes (Debezium delivers at least once)."""
        if self.process:
            self.process.signal(signal.SIGKILL)
            self.process.stop(grace=5)

    def stop(self, grace: float = 20.0) -> None:
        if self.process:
            self.process.stop(grace)

    def __enter__(self) -> KafkaConnect:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_connect(bootstrap: str, connectors: Mapping[str, Mapping[str, object]], data_dir: Path | None = None,
                  timeout: float = 120.0) -> KafkaConnect:
    """Start a standalone Connect worker on `bootstrap` running `connectors` (name -> settings)."""
    return KafkaConnect(bootstrap, connectors, data_dir).start(timeout)
