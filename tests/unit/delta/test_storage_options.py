"""Hadoop settings -> delta-rs URI and storage options, without Spark."""

from __future__ import annotations

import pytest

from kafka_spark.delta.storage import delta_rs_location, delta_rs_uri, hadoop_keys, storage_options

LOCAL_S3 = {
    "fs.s3a.endpoint": "http://127.0.0.1:9000",
    "fs.s3a.path.style.access": "true",
    "fs.s3a.access.key": "AK",
    "fs.s3a.secret.key": "SK",
    "fs.s3a.endpoint.region": "eu-west-1",
}


@pytest.mark.parametrize(("table", "uri"), [
    ("s3a://lake/t", "s3://lake/t"),
    ("s3n://lake/t", "s3://lake/t"),
    ("S3A://lake/t", "s3://lake/t"),
    ("s3://lake/t", "s3://lake/t"),
    ("abfss://c@acct.dfs.core.windows.net/t", "abfss://c@acct.dfs.core.windows.net/t"),
    ("gs://b/t", "gs://b/t"),
    ("/data/t", "/data/t"),
    ("file:///data/t", "file:///data/t"),
])
def test_uri(table: str, uri: str) -> None:
    assert delta_rs_uri(table) == uri


def test_path_style_endpoint_with_keys() -> None:
    assert storage_options("s3a://lake/t", LOCAL_S3) == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ALLOW_HTTP": "true", "AWS_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
    }


def test_spark_hadoop_prefix_and_session_token() -> None:
    conf = {f"spark.hadoop.{k}": v for k, v in LOCAL_S3.items()}
    conf["spark.hadoop.fs.s3a.session.token"] = "TOKEN"
    assert storage_options("s3a://lake/t", conf)["AWS_SESSION_TOKEN"] == "TOKEN"
    assert storage_options("s3a://lake/t", conf)["AWS_ACCESS_KEY_ID"] == "AK"


def test_per_bucket_settings_win_for_their_bucket_only() -> None:
    conf = {**LOCAL_S3, "fs.s3a.bucket.other.access.key": "AK2", "fs.s3a.bucket.other.secret.key": "SK2",
            "fs.s3a.bucket.other.endpoint": "https://objects.example.com", "fs.s3a.bucket.other.endpoint.region": ""}
    other = storage_options("s3a://other/t", conf)
    assert other["AWS_ACCESS_KEY_ID"] == "AK2"
    assert other["AWS_SECRET_ACCESS_KEY"] == "SK2"
    assert other["AWS_ENDPOINT_URL"] == "https://objects.example.com"
    assert "AWS_ALLOW_HTTP" not in other
    assert other["AWS_REGION"] == "eu-west-1"  # an empty per-bucket value falls back, as in Hadoop
    assert storage_options("s3a://lake/t", conf)["AWS_ACCESS_KEY_ID"] == "AK"


def test_bare_endpoint_takes_its_scheme_from_ssl_setting() -> None:
    conf = {"fs.s3a.endpoint": "minio:9000", "fs.s3a.path.style.access": "true"}
    assert storage_options("s3a://b/t", conf)["AWS_ENDPOINT_URL"] == "https://minio:9000"
    conf["fs.s3a.connection.ssl.enabled"] = "false"
    options = storage_options("s3a://b/t", conf)
    assert options["AWS_ENDPOINT_URL"] == "http://minio:9000"
    assert options["AWS_ALLOW_HTTP"] == "true"


def test_virtual_hosted_endpoint_names_the_bucket() -> None:
    # S3A's default is virtual-hosted requests; delta-rs then wants the bucket in the endpoint itself.
    options = storage_options("s3a://lake/t", {"fs.s3a.endpoint": "https://objects.example.com"})
    assert options == {"AWS_ENDPOINT_URL": "https://lake.objects.example.com",
                       "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true"}


@pytest.mark.parametrize(("endpoint", "region"), [
    ("s3.eu-central-1.amazonaws.com", "eu-central-1"),
    ("https://s3-eu-west-2.amazonaws.com", "eu-west-2"),
    ("s3.amazonaws.com", "us-east-1"),
])
def test_aws_endpoints_become_a_region(endpoint: str, region: str) -> None:
    options = storage_options("s3a://b/t", {"fs.s3a.endpoint": endpoint})
    assert options == {"AWS_REGION": region, "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true"}


def test_explicit_region_wins_over_the_endpoints() -> None:
    conf = {"fs.s3a.endpoint": "s3.eu-central-1.amazonaws.com", "fs.s3a.endpoint.region": "us-west-2"}
    assert storage_options("s3a://b/t", conf)["AWS_REGION"] == "us-west-2"


def test_no_settings_leave_delta_rs_to_its_own_chain() -> None:
    assert storage_options("s3a://b/t", {}) == {"AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true"}


def test_anonymous_provider_skips_signing() -> None:
    conf = {"fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"}
    assert storage_options("s3a://public/t", conf)["AWS_SKIP_SIGNATURE"] == "true"


def test_azure_account_key() -> None:
    conf = {"fs.azure.account.key.acct.dfs.core.windows.net": "KEY",
            "fs.azure.account.key.other.dfs.core.windows.net": "NOT-THIS"}
    assert storage_options("abfss://c@acct.dfs.core.windows.net/t", conf) == {
        "AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_ACCOUNT_KEY": "KEY"}
    assert storage_options("abfss://c@third.dfs.core.windows.net/t", conf) == {}


def test_gcs_service_account_keyfile() -> None:
    assert storage_options("gs://b/t", {"fs.gs.auth.service.account.json.keyfile": "/k.json"}) == {
        "GOOGLE_SERVICE_ACCOUNT": "/k.json"}
    assert storage_options("gs://b/t", {"google.cloud.auth.service.account.json.keyfile": "/old.json"}) == {
        "GOOGLE_SERVICE_ACCOUNT": "/old.json"}


def test_other_locations_get_no_options() -> None:
    assert delta_rs_location("/data/t", LOCAL_S3) == ("/data/t", {})
    assert delta_rs_location("hdfs://nn:8020/t", LOCAL_S3) == ("hdfs://nn:8020/t", {})
    assert delta_rs_location("s3a://lake/t") == ("s3://lake/t", {"AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true"})


def test_keys_read_from_a_session_cover_what_the_mapping_uses() -> None:
    keys = hadoop_keys("s3a://lake/t")
    assert "fs.s3a.bucket.lake.secret.key" in keys and "fs.s3a.secret.key" in keys
    only = {k: v for k, v in {**LOCAL_S3, "fs.s3a.bucket.lake.access.key": "AK2"}.items() if k in keys}
    assert storage_options("s3a://lake/t", only)["AWS_ACCESS_KEY_ID"] == "AK2"
    assert hadoop_keys("abfss://c@acct.dfs.core.windows.net/t") == ["fs.azure.account.key.acct.dfs.core.windows.net"]
    assert hadoop_keys("/data/t") == []
