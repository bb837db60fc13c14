"""The redaction pattern added to Spark's: every secret client property as a `kafka.` option, and nothing else."""

from __future__ import annotations

import re

from kafka_spark.client.properties import SECRET_KEYS
from kafka_spark.spark.redaction import SECRET_OPTIONS_REGEX, SPARK_DEFAULT_OPTIONS_REGEX, redaction_regex


def test_the_pattern_matches_every_secret_option_and_no_other() -> None:
    pattern = re.compile(SECRET_OPTIONS_REGEX)  # Java and Python agree on this subset of the syntax
    for key in SECRET_KEYS:
        assert pattern.search(f"kafka.{key}") and pattern.search(f"KAFKA.{key.upper()}")
    for key in ("kafka.bootstrap.servers", "kafka.ssl.keystore.location", "kafka.sasl.mechanism", "subscribe"):
        assert not pattern.search(key)
    # ssl.keystore.key is the one Spark's defaults miss: its name and its PEM value match neither
    assert not re.search(r"(?i)secret|password|token|access[.]?key", "kafka.ssl.keystore.key")


def test_added_once_to_spark_default_or_to_a_users_pattern() -> None:
    assert redaction_regex(None) == f"{SPARK_DEFAULT_OPTIONS_REGEX}|{SECRET_OPTIONS_REGEX}"
    assert redaction_regex(redaction_regex(None)) == redaction_regex(None)
    assert redaction_regex("(?i)url|endpoint") == f"(?i)url|endpoint|{SECRET_OPTIONS_REGEX}"
