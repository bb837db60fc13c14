"""Telling a catalog table name from a path, and what reaching a table without Spark accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_spark.cli.delta_offsets_cmd import hadoop_settings
from kafka_spark.delta.location import locate, path_location
from kafka_spark.delta.storage import environment_hadoop_conf
from kafka_spark.errors import ConfigError
from kafka_spark.sink.table_files import ArrowFiles, LocalFiles
from kafka_spark.sink.table_names import is_table_name


@pytest.mark.parametrize("name", [
    "db.orders", "lake.bronze.orders", "spark_catalog.default.t", "_db.t1", "`my-db`.orders",
    "main.`bronze events`.orders", " db.orders ",
])
def test_names(name: str) -> None:
    assert is_table_name(name)


@pytest.mark.parametrize("path", [
    "orders", "./db.orders", "db.orders/", "/lake/db.orders", "data/page_views", "a.b.c.d", "1db.orders",
    "db..orders", ".orders", "s3a://lake/db.orders", "file:/lake/t", "file:///lake/t", "hdfs://nn:8020/t",
    "abfss://c@acct.dfs.core.windows.net/t", "gs://b/db.orders", "`a/b`.c", "db.orders.json.bak", "",
])
def test_paths(path: str) -> None:
    assert not is_table_name(path)


def test_a_name_without_spark_is_refused_with_what_to_do() -> None:
    with pytest.raises(ConfigError, match=r"lake\.orders is a catalog table name: finding its location needs "
                                          r"Spark\. Give the table's location instead \(DESCRIBE DETAIL lake\.orders"):
        locate("lake.orders", {"fs.s3a.endpoint": "http://127.0.0.1:9"})


def test_paths_are_located_without_spark(tmp_path: Path) -> None:
    local = locate(tmp_path / "t")
    assert local is not None and isinstance(local.files, LocalFiles) and local.name is None
    assert locate(f"file://{tmp_path}/t").files.describe("x") == str(tmp_path / "t" / "x")
    conf = {"fs.s3a.endpoint": "http://127.0.0.1:9", "fs.s3a.path.style.access": "true"}
    remote = path_location("s3a://lake/t", conf)
    assert isinstance(remote.files, ArrowFiles)
    assert remote.delta_rs_uri == "s3://lake/t" and remote.storage_options["AWS_ENDPOINT_URL"] == "http://127.0.0.1:9"
    assert str(remote) == "s3a://lake/t"


def test_cli_hadoop_settings_take_spark_and_hadoop_keys_over_the_environment() -> None:
    env = {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_DEFAULT_REGION": "eu-west-1",
           "AWS_ENDPOINT_URL": "http://minio:9000", "HOME": "/root"}
    conf = hadoop_settings(["spark.hadoop.fs.s3a.access.key=AK2", "fs.s3a.path.style.access = true",
                            "spark.executor.memory=4g"], env)
    assert conf == {"fs.s3a.access.key": "AK2", "fs.s3a.secret.key": "SK", "fs.s3a.endpoint.region": "eu-west-1",
                    "fs.s3a.endpoint": "http://minio:9000", "fs.s3a.path.style.access": "true"}


def test_cli_setting_errors_do_not_repeat_the_value() -> None:
    with pytest.raises(ConfigError) as bad:
        hadoop_settings(["fs.s3a.secret.keyTOPSECRET"], {})
    assert "TOPSECRET" not in str(bad.value)
    with pytest.raises(ConfigError, match=r"--conf hadoop.tmp.dir: expected a Hadoop file system setting") as other:
        hadoop_settings(["spark.hadoop.hadoop.tmp.dir=TOPSECRET"], {})
    assert "TOPSECRET" not in str(other.value)


def test_aws_environment_first_variable_wins() -> None:
    env = {"AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ENDPOINT_URL_S3": "http://s3only:1",
           "AWS_ENDPOINT_URL": "http://all:1", "AWS_SESSION_TOKEN": ""}
    assert environment_hadoop_conf(env) == {"fs.s3a.endpoint.region": "us-west-2", "fs.s3a.endpoint": "http://s3only:1"}
