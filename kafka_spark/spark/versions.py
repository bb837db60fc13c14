"""The PySpark release each feature of the data sources needs, checked before the feature is used."""

from __future__ import annotations

import re
from typing import Any

from kafka_spark.errors import ConfigError

# The oldest PySpark whose Python DataSource API the batch reader and writer use: DataSource, readers that
# yield Arrow record batches, DataSourceArrowWriter and the automatic registration of `pyspark_*` modules.
OLDEST = (4, 0)
# DataSourceStreamArrowWriter.
STREAM_WRITE = (4, 1)
# Admission control for Python stream sources: ReadLimit, latestOffset(start, limit), SupportsTriggerAvailableNow.
STREAM_READ = (4, 2)
# The newest PySpark that a delta-spark release supports (delta-spark 4.4.1 requires pyspark<=4.2.0). Newer ones
# have no Delta Lake on Spark (its data source, catalog and Python API) unless the session brings its own.
DELTA_SPARK_NEWEST = (4, 2)


class PySparkVersionError(ConfigError):
    """A feature needs a newer PySpark than the one installed."""


class DeltaSparkError(PySparkVersionError):
    """A feature needs Delta Lake on Spark (delta-spark), which no release supports on the installed PySpark."""


def pyspark_version() -> str:
    """The installed PySpark's version string."""
    import pyspark

    return pyspark.__version__


def _minor(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:2])


def require_pyspark(feature: str, needed: tuple[int, int], version: str | None = None) -> None:
    """Raise PySparkVersionError (one line, naming `needed`) when PySpark `version` (default: the installed one)
    is older than `needed`."""
    version = version or pyspark_version()
    if _minor(version) < needed:
        raise PySparkVersionError(f"{feature} needs PySpark {needed[0]}.{needed[1]} or newer; this is PySpark "
                                  f"{version}")


def delta_spark_released(version: str | None = None) -> bool:
    """Whether a delta-spark release supports PySpark `version` (default: the installed one)."""
    return _minor(version or pyspark_version()) <= DELTA_SPARK_NEWEST


def session_has_delta(spark: Any) -> bool | None:
    """Whether the session's Spark finds the `delta` data source (Databricks' own Delta included); None when the
    session cannot be asked (Spark Connect has no JVM gateway) or the answer is not a plain "not found"."""
    jvm, session = getattr(spark, "_jvm", None), getattr(spark, "_jsparkSession", None)
    if jvm is None or session is None:
        return None
    try:
        lookup = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource
        lookup("delta", session.sessionState().conf())
    except Exception as exc:  # py4j's error for Spark's DATA_SOURCE_NOT_FOUND, or a gateway that refuses the call
        return False if "DATA_SOURCE_NOT_FOUND" in str(exc) else None
    return True


def require_delta_spark(feature: str, spark: Any = None, version: str | None = None) -> None:
    """Raise DeltaSparkError (one line: the feature, the PySpark version, what to do instead) when no delta-spark
    release supports PySpark `version` (default: the installed one) and the session `spark`, if given, has no
    Delta of its own either. Older PySpark passes unchecked: Spark itself says when Delta's jars are missing."""
    version = version or pyspark_version()
    if delta_spark_released(version) or (spark is not None and session_has_delta(spark) is not False):
        return
    newest = ".".join(map(str, DELTA_SPARK_NEWEST))
    raise DeltaSparkError(
        f"{feature} needs Delta Lake on Spark (delta-spark), which has no release for PySpark {version} yet (the "
        f"newest supports PySpark {newest}): write with the direct writer (writer='direct', Delta through "
        f"delta-rs), or use PySpark {newest} or older")
