"""The s3a:// jar set is built for the Hadoop inside PySpark."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pyspark

from kafka_spark.local.jars import ARTIFACT_SETS


def test_hadoop_aws_is_the_hadoop_version_pyspark_ships() -> None:
    pom = resources.files("kafka_spark.local").joinpath("poms", ARTIFACT_SETS["s3a"][0]).read_text()
    wanted = re.search(r"<hadoop\.version>([^<]+)</hadoop\.version>", pom)
    shipped = [p.name for p in (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar")]
    assert wanted and shipped == [f"hadoop-client-api-{wanted.group(1)}.jar"]
