"""The SparkSession an application runs on: the one that exists, spark-submit's, or a local one."""

from __future__ import annotations

import os
import threading
from typing import Any

# Spark's start-up INFO lines would bury an application's output; a --conf spark.log.level still wins.
LOG_LEVEL_ENV = "KAFKA_SPARK_SPARK_LOG_LEVEL"


def driver_session(app_name: str) -> Any:  # -> pyspark.sql.SparkSession
    """The active session if there is one; under spark-submit the driver's; else `local_spark`'s."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        from pyspark import SparkConf

        builder = SparkSession.builder.appName(app_name)
        if not SparkConf().contains("spark.log.level"):
            builder = builder.config("spark.log.level", os.environ.get(LOG_LEVEL_ENV, "WARN"))
        return builder.getOrCreate()
    from kafka_spark.local.spark import local_spark

    return local_spark(app_name)


def gateway_process() -> Any | None:
    """The JVM this driver started (a `subprocess.Popen`), or None (spark-submit started the driver, or no
    session yet)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    return getattr(gateway, "proc", None) if gateway is not None else None


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
            self._session = driver_session(self.app_name)
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
