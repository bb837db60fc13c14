"""The PySpark release each feature of the data sources needs, checked before the feature is used."""

from __future__ import annotations

import re

from kafka_spark.errors import ConfigError

# The oldest PySpark whose Python DataSource API the batch reader and writer use: DataSource, readers that
# yield Arrow record batches, DataSourceArrowWriter and the automatic registration of `pyspark_*` modules.
OLDEST = (4, 0)
# DataSourceStreamArrowWriter.
STREAM_WRITE = (4, 1)
# Admission control for Python stream sources: ReadLimit, latestOffset(start, limit), SupportsTriggerAvailableNow.
STREAM_READ = (4, 2)


class PySparkVersionError(ConfigError):
    """A feature needs a newer PySpark than the one installed."""


def pyspark_version() -> str:
    """The installed PySpark's version string."""
    import pyspark

    return pyspark.__version__


def require_pyspark(feature: str, needed: tuple[int, int], version: str | None = None) -> None:
    """Raise PySparkVersionError (one line, naming `needed`) when PySpark `version` (default: the installed one)
    is older than `needed`."""
    version = version or pyspark_version()
    if tuple(int(p) for p in re.findall(r"\d+", version)[:2]) < needed:
        raise PySparkVersionError(f"{feature} needs PySpark {needed[0]}.{needed[1]} or newer; this is PySpark "
                                  f"{version}")
