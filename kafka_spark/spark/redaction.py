"""Which settings hold secrets, for the whole project: Spark's redaction of data source options extended to them,
and the reprs of the options and configurations that carry them.

Spark prints a source's options in plans (explain, the UI's SQL pages, the event log), hiding those whose
key or value matches `spark.redaction.regex` (default `(?i)secret|password|token|access[.]?key`) or
`spark.sql.redaction.options.regex` (default `(?i)url`). A secret under another name passes both:
`kafka.ssl.keystore.key` holds a PEM private key, `fs.azure.account.key.<account>.dfs.core.windows.net` a storage
account key. Adding our secret keys to the session's `spark.sql.redaction.options.regex` (a runtime setting)
hides them wherever Spark turns options into text.

The same pattern, with Spark's default one, decides which values `is_secret` reports and `redacted_repr` hides,
so a repr never shows what a plan would hide.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from kafka_spark.client.properties import REDACTED, SECRET_KEYS
from kafka_spark.formats.registry.settings import PREFIX as REGISTRY_PREFIX
from kafka_spark.formats.registry.settings import SECRET_OPTIONS as REGISTRY_SECRET_OPTIONS

OPTIONS_REGEX_CONF = "spark.sql.redaction.options.regex"
SPARK_DEFAULT_OPTIONS_REGEX = "(?i)url"
# spark.redaction.regex's default: Spark hides these names in plans whatever the options pattern says.
SPARK_DEFAULT_SECRET_REGEX = "(?i)secret|password|token|access[.]?key"

# Hadoop keys that hold credentials, as options of pykafka-log or as session settings (a `spark.hadoop.` prefix,
# a per-bucket or per-account form); after Hadoop's own hadoop.security.sensitive-config-keys and the S3A, ABFS,
# WASB, ADLS and GCS connectors' documentation. Searched, as Spark searches its patterns, and never anchored at
# the end but for `credential`, whose `fs.s3a.aws.credentials.provider` names classes, not secrets.
HADOOP_SECRET_PATTERNS = (
    r"(?:^|\.)fs\.azure\.account\.key\.",  # WASB and ABFS storage account keys, one per account
    r"(?:^|\.)fs\.azure\.sas\.",  # WASB SAS tokens per container, ABFS's fixed SAS token
    r"(?:^|\.)fs\.azure\.encryption\.encoded\.client-provided-key",  # ABFS customer-provided encryption key
    r"(?:^|\.)(?:fs\.gs|google\.cloud)\.auth\.",  # GCS service-account private keys and key files, OAuth secrets
    r"(?:^|\.)fs\.gs\.encryption\.",  # GCS customer-supplied encryption keys
    r"(?:^|\.)fs\.s3[an]?\..*(?:access|secret|session|encryption)[.-]?key",  # S3A (per bucket too), SSE-C keys
    r"(?:^|\.)fs\..*(?:secret|password|passphrase|token|credential$)",  # OAuth secrets and tokens of any store
    r"(?:^|\.)dfs\.adls\.oauth2\.",  # ADLS Gen1's older names
)
# Every secret client property as a `kafka.` option, the schema registry's secret options and the Hadoop
# credential keys; Java regex, case-insensitive only inside the group.
SECRET_OPTIONS_REGEX = "(?i:" + "|".join([*(re.escape(name) for name in sorted(
    {f"kafka.{key}" for key in SECRET_KEYS} | set(REGISTRY_SECRET_OPTIONS))), *HADOOP_SECRET_PATTERNS]) + ")"

_SECRET = (re.compile(SECRET_OPTIONS_REGEX), re.compile(SPARK_DEFAULT_SECRET_REGEX))


def is_secret(name: str) -> bool:
    """Whether the setting `name` holds a secret: a Kafka client property (bare, as `LoadOptions.kafka` holds
    it, or as a `kafka.` option), a schema registry setting (with or without `schema.registry.`), a Hadoop
    credential key (with or without `spark.hadoop.`), or any name Spark's default pattern hides in plans."""
    key = name.strip()
    spellings = (key, f"kafka.{key}", f"{REGISTRY_PREFIX}{key}")
    return any(pattern.search(spelling) for pattern in _SECRET for spelling in spellings)


def redacted(settings: Mapping[Any, Any]) -> dict[Any, Any]:
    """`settings` with the value of every secret setting (`is_secret`) replaced by a marker, nested mappings
    too."""
    return {k: REDACTED if isinstance(k, str) and is_secret(k) and v is not None
            else redacted(v) if isinstance(v, Mapping) else v for k, v in settings.items()}


def redacted_repr(self: Any) -> str:
    """A dataclass's repr as `dataclasses` writes it, but with the secrets of its mapping fields hidden
    (`redacted`); fields declared `repr=False` stay out. Assign it as `__repr__` in each class holding client,
    registry or storage settings (a subclass too: `dataclass` writes a fresh repr for it otherwise)."""
    shown = []
    for f in dataclasses.fields(self):
        if f.repr:
            value = getattr(self, f.name)
            if isinstance(value, Mapping):
                value = redacted(value)
            shown.append(f"{f.name}={value!r}")
    return f"{type(self).__qualname__}({', '.join(shown)})"


def redaction_regex(current: str | None) -> str:
    """`current` (Spark's default when unset) with the secret options added, unless already there."""
    current = current or SPARK_DEFAULT_OPTIONS_REGEX
    return current if SECRET_OPTIONS_REGEX in current else f"{current}|{SECRET_OPTIONS_REGEX}"


def redact_secret_options(spark) -> None:  # spark: pyspark.sql.SparkSession
    """Make `spark` hide the secret `kafka.*`, `schema.registry.*` and Hadoop credential options in every plan
    string it builds from now on."""
    current = spark.conf.get(OPTIONS_REGEX_CONF, None)
    wanted = redaction_regex(current)
    if wanted != current:
        spark.conf.set(OPTIONS_REGEX_CONF, wanted)
