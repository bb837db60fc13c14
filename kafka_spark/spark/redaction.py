"""Spark's redaction of data source options, extended to the secret `kafka.*` and `schema.registry.*` options it
would show.

Spark prints a source's options in plans (explain, the UI's SQL pages, the event log), hiding those whose
key or value matches `spark.redaction.regex` (default `(?i)secret|password|token|access[.]?key`) or
`spark.sql.redaction.options.regex` (default `(?i)url`). A client secret under another name passes both:
`kafka.ssl.keystore.key` holds a PEM private key. Adding our secret keys to the session's
`spark.sql.redaction.options.regex` (a runtime setting) hides them wherever Spark turns options into text.
"""

from __future__ import annotations

import re

from kafka_spark.client.config import SECRET_KEYS
from kafka_spark.formats.registry_settings import SECRET_OPTIONS as REGISTRY_SECRET_OPTIONS

OPTIONS_REGEX_CONF = "spark.sql.redaction.options.regex"
SPARK_DEFAULT_OPTIONS_REGEX = "(?i)url"
# Every secret client property as a `kafka.` option, and the schema registry's secret options; Java regex,
# case-insensitive only inside the group.
SECRET_OPTIONS_REGEX = "(?i:" + "|".join(re.escape(name) for name in sorted(
    {f"kafka.{key}" for key in SECRET_KEYS} | set(REGISTRY_SECRET_OPTIONS))) + ")"


def redaction_regex(current: str | None) -> str:
    """`current` (Spark's default when unset) with the secret options added, unless already there."""
    current = current or SPARK_DEFAULT_OPTIONS_REGEX
    return current if SECRET_OPTIONS_REGEX in current else f"{current}|{SECRET_OPTIONS_REGEX}"


def redact_secret_options(spark) -> None:  # spark: pyspark.sql.SparkSession
    """Make `spark` hide the secret `kafka.*` options in every plan string it builds from now on."""
    current = spark.conf.get(OPTIONS_REGEX_CONF, None)
    wanted = redaction_regex(current)
    if wanted != current:
        spark.conf.set(OPTIONS_REGEX_CONF, wanted)
