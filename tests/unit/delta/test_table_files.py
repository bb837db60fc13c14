"""The files kept beside a table behave the same on a local disk and through a pyarrow file system, and the
pyarrow file system of a store follows the Hadoop settings given to Spark."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

from kafka_spark.delta.storage import arrow_filesystem
from kafka_spark.sink.table_files import ArrowFiles, LocalFiles, TableFiles


@pytest.fixture(params=["local", "arrow"])
def files(request: pytest.FixtureRequest, tmp_path: Path) -> TableFiles:
    table = tmp_path / "table"
    if request.param == "local":
        return LocalFiles(table)
    # A local pyarrow file system takes the path a store without atomic uploads takes: a temporary name, a move.
    return ArrowFiles(f"file://{table}", pafs.LocalFileSystem(), str(table))


def test_write_read_replace_list_delete(files: TableFiles) -> None:
    assert files.read_text("_kafka_spark/offsets/a/0.json") is None
    assert files.list_dirs("_kafka_spark/offsets") == [] and files.list_files("_kafka_spark/offsets/a") == []
    files.write_text("_kafka_spark/offsets/a/0.json", '{"batch":0}')
    files.write_text("_kafka_spark/offsets/a/pending/1-r.json", "{}")
    files.write_text("_kafka_spark/offsets/b/pending/0-r.json", "{}")
    files.write_text("_kafka_spark/offsets/a/0.json", '{"batch":0,"again":1}')
    assert files.read_text("_kafka_spark/offsets/a/0.json") == '{"batch":0,"again":1}'
    assert files.list_dirs("_kafka_spark/offsets") == ["a", "b"]
    # No temporary file is left beside the one written.
    assert files.list_files("_kafka_spark/offsets/a") == ["0.json"]
    assert files.list_dirs("_kafka_spark/offsets/a") == ["pending"]
    files.delete("_kafka_spark/offsets/a/pending/1-r.json")
    files.delete("_kafka_spark/offsets/a/pending/1-r.json")
    assert files.list_files("_kafka_spark/offsets/a/pending") == []
    assert files.describe("x/y.json").endswith("table/x/y.json")


def test_threads_of_one_process_write_the_same_file_at_once(files: TableFiles) -> None:
    # A stream keeps its commit record while a reader of its position, in the same driver, keeps the same one.
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for _ in range(50):
                files.write_text("_kafka_spark/offsets/a/1.json", f'{{"batch":1,"by":{n}}}')
        except BaseException as error:  # the test reports any failure of a thread
            errors.append(error)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert files.read_text("_kafka_spark/offsets/a/1.json") in {f'{{"batch":1,"by":{n}}}' for n in range(4)}
    assert files.list_files("_kafka_spark/offsets/a") == ["1.json"]


def _options(fs: Any) -> dict[str, Any]:
    return fs.__reduce__()[1][0]


def test_s3_follows_s3a_settings_per_bucket() -> None:
    conf = {"spark.hadoop.fs.s3a.endpoint": "127.0.0.1:9000", "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.path.style.access": "true", "fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK",
            "fs.s3a.bucket.lake.access.key": "AK2", "fs.s3a.bucket.lake.secret.key": "SK2"}
    fs, root = arrow_filesystem("s3a://lake/tables/t", conf)
    assert isinstance(fs, pafs.S3FileSystem) and root == "lake/tables/t"
    options = _options(fs)
    assert (options["access_key"], options["secret_key"]) == ("AK2", "SK2")
    assert (options["endpoint_override"], options["scheme"], options["force_virtual_addressing"]) == (
        "127.0.0.1:9000", "http", False)
    other, _ = arrow_filesystem("s3a://other/t", conf)
    assert _options(other)["access_key"] == "AK"


def test_s3_on_aws_endpoints_and_anonymous_access() -> None:
    fs, _ = arrow_filesystem("s3a://b/t", {"fs.s3a.endpoint": "s3.eu-west-1.amazonaws.com"})
    options = _options(fs)
    assert options["region"] == "eu-west-1" and options["endpoint_override"] == ""
    anonymous = {"fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider",
                 "fs.s3a.endpoint.region": "us-east-2"}
    fs, _ = arrow_filesystem("s3a://public/t", anonymous)
    assert _options(fs)["anonymous"] is True and _options(fs)["region"] == "us-east-2"
    # A virtual-hosted endpoint (S3A's default addressing) stays virtual-hosted.
    hosted = {"fs.s3a.endpoint": "https://objects.example.com", "fs.s3a.endpoint.region": "x"}
    fs, _ = arrow_filesystem("s3a://b/t", hosted)
    assert _options(fs)["force_virtual_addressing"] is True


def test_local_and_file_uris_fall_back_to_pyarrow() -> None:
    fs, root = arrow_filesystem("file:///data/t", {})
    assert isinstance(fs, pafs.LocalFileSystem) and root == "/data/t"
