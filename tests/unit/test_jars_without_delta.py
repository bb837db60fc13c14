"""A Spark that no Delta release is built for (4.3) gets local sessions without Delta: no Delta jars in its set, no
Delta extension or catalog in its configs, and Spark's Kafka connector from the previous minor until Central has
its own."""

from __future__ import annotations

import re

import pytest

from kafka_spark.local import jars
from kafka_spark.local.jars import has_delta, jar_dir, pom_properties, pom_text, spark_delta
from kafka_spark.local.spark import DELTA_CONFIGS, local_spark_configs


@pytest.fixture
def pyspark_4_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jars, "pyspark_version", lambda: "4.3.0")
    monkeypatch.setattr(jars, "_installed", lambda dist: None)


def test_no_delta_release_for_spark_4_3() -> None:
    assert spark_delta("4.3.0") is None
    assert spark_delta("4.2.0") == ("delta-spark_4.2_2.13", "4.4.0")
    # an installed delta-spark names the release built for this Spark (one that supports 4.3, when there is one)
    assert spark_delta("4.3.0", "4.5.0") == ("delta-spark_4.3_2.13", "4.5.0")


@pytest.mark.usefixtures("pyspark_4_3")
def test_the_spark_set_of_4_3_has_no_delta() -> None:
    assert not has_delta()
    # Central has no spark-sql-kafka 4.3.x yet: 4.2.0 exactly, or a 4.3 release up to the installed one
    assert pom_properties("spark") == {"spark.version": "[4.2.0,4.2.0],[4.3.0,4.3.0]"}
    pom = pom_text("spark")
    assert "<groupId>io.delta</groupId>" not in pom and "<delta." not in pom
    assert re.search(r"<artifactId>spark-sql-kafka-0-10_2\.13</artifactId><version>\$\{spark\.version\}", pom)
    assert jar_dir("spark").name == "spark-4.3.0"


@pytest.mark.usefixtures("pyspark_4_3")
def test_sessions_of_4_3_have_no_delta_extension_or_catalog() -> None:
    conf = local_spark_configs(jars=False)
    assert not set(DELTA_CONFIGS) & set(conf)


def test_sessions_with_delta_jars_have_its_extension_and_catalog() -> None:
    assert has_delta()  # the repository's pinned PySpark 4.2 with delta-spark 4.4
    conf = local_spark_configs(jars=False)
    assert {k: conf[k] for k in DELTA_CONFIGS} == DELTA_CONFIGS
