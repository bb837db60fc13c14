"""The JVM jar sets follow the installed PySpark: s3a:// for its Hadoop, Delta and the Kafka connector for its
Spark release."""

from __future__ import annotations

import re
from pathlib import Path

import pyspark
import pytest

from kafka_spark.local import jars
from kafka_spark.local.jars import AWS_SDK_FOR_HADOOP, SparkVersionError, delta_artifact, jar_dir, pom_text


def test_hadoop_aws_is_the_hadoop_version_pyspark_ships() -> None:
    wanted = re.search(r"<hadoop\.version>([^<]+)</hadoop\.version>", pom_text("s3a"))
    shipped = [p.name for p in (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar")]
    assert wanted and shipped == [f"hadoop-client-api-{wanted.group(1)}.jar"]


def test_spark_set_is_for_the_installed_pyspark() -> None:
    pom = pom_text("spark")
    minor = ".".join(pyspark.__version__.split(".")[:2])
    assert f"<spark.version>[{minor}.0,{pyspark.__version__}]</spark.version>" in pom
    assert f"<delta.artifact>delta-spark_{minor}_2.13</delta.artifact>" in pom
    assert jar_dir("spark").name.startswith(f"spark-{pyspark.__version__}-delta-")


@pytest.mark.parametrize(("spark", "delta", "expected"), [
    ("4.2.0", None, ("delta-spark_4.2_2.13", "4.4.0")),
    ("4.1.4", None, ("delta-spark_4.1_2.13", "4.4.0")),
    ("4.0.1", None, ("delta-spark_4.0_2.13", "4.4.0")),
    ("4.0.0", None, ("delta-spark_2.13", "4.0.0")),
    ("4.1.1", "4.3.1", ("delta-spark_4.1_2.13", "4.3.1")),
])
def test_delta_release_for_each_spark(spark: str, delta: str | None, expected: tuple[str, str]) -> None:
    assert delta_artifact(spark, delta) == expected


def test_a_spark_without_a_delta_release_is_named() -> None:
    with pytest.raises(SparkVersionError, match=r"no Delta Lake release is built for Spark 4\.3"):
        delta_artifact("4.3.0")


@pytest.mark.parametrize("hadoop", sorted(AWS_SDK_FOR_HADOOP))
def test_transfer_manager_is_the_newest_published_within_the_sdk_minor(hadoop: str, monkeypatch) -> None:
    # Central has no s3-transfer-manager for some SDK releases (2.24.6, Hadoop 3.4.1's, among them).
    monkeypatch.setattr(jars, "hadoop_version", lambda: hadoop)
    sdk = AWS_SDK_FOR_HADOOP[hadoop]
    minor = ".".join(sdk.split(".")[:2])
    pom = pom_text("s3a")
    assert f"<sdk.version>{sdk}</sdk.version>" in pom
    assert f"<transfer.version>[{minor}.0,{sdk}]</transfer.version>" in pom
    assert re.search(r"<artifactId>s3-transfer-manager</artifactId>\s*<version>\$\{transfer\.version\}</version>", pom)
