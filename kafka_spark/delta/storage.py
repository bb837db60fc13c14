"""delta-rs table URIs and storage options from the Hadoop settings the user gave Spark.

The credentials a user configured for Spark stay the only copy: what delta-rs (the table's log) needs
is read from the same Hadoop keys as pyarrow's file systems (`segments/object_store.py`, for the
files kept beside the table when there is no Spark). Mapped, per store:

- `s3a://` (and `s3n://`, `s3://`): `fs.s3a.access.key`, `secret.key`, `session.token`, `endpoint`,
  `endpoint.region`, `path.style.access`, `connection.ssl.enabled`, and the anonymous credentials
  provider; a per-bucket `fs.s3a.bucket.<bucket>.<key>` wins over `fs.s3a.<key>`, as in S3A. The URI
  becomes `s3://`. Without keys delta-rs falls back to its own chain (environment, profile, instance
  role), as S3A's default providers do.
- `abfss://` / `abfs://`: the account key `fs.azure.account.key.<account>.dfs.core.windows.net`.
- `gs://`: the service-account JSON key file (`fs.gs.auth.service.account.json.keyfile`, or the older
  `google.cloud.auth.service.account.json.keyfile`).

Anything else (OAuth, SAS tokens, custom credential providers, `hdfs://`, local paths) passes through
with no options, leaving delta-rs to its own defaults. Without Spark, the AWS SDK's environment
variables (`AWS_ACCESS_KEY_ID`, `AWS_REGION`, `AWS_ENDPOINT_URL`, ...) can stand in for S3A's keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from kafka_spark.segments.object_store import (
    AZURE_SCHEMES,
    GCS_KEYFILES,
    S3_SCHEMES,
    arrow_filesystem,
    environment_hadoop_conf,
    hadoop_settings,
    s3_settings,
)

__all__ = ["arrow_filesystem", "delta_rs_location", "delta_rs_uri", "environment_hadoop_conf", "hadoop_keys",
           "session_hadoop_conf", "storage_options"]

# S3A options read per bucket; the secrets among them go through Hadoop's credential providers.
_S3A_KEYS = ("access.key", "secret.key", "session.token", "endpoint", "endpoint.region", "path.style.access",
             "connection.ssl.enabled", "aws.credentials.provider")
_SECRET_SUFFIXES = (".access.key", ".secret.key", ".session.token", ".dfs.core.windows.net")


def delta_rs_uri(table: str) -> str:
    """The table's URI as delta-rs spells it: `s3a://` and `s3n://` become `s3://`; others are unchanged."""
    scheme, sep, rest = table.partition("://")
    return f"s3://{rest}" if sep and scheme.lower() in S3_SCHEMES else table


def hadoop_keys(table: str) -> list[str]:
    """The Hadoop configuration keys `storage_options` reads for `table`."""
    parts = urlsplit(table)
    scheme = parts.scheme.lower()
    if scheme in S3_SCHEMES:
        return [f"fs.s3a.{prefix}{key}" for key in _S3A_KEYS for prefix in (f"bucket.{parts.netloc}.", "")]
    if scheme in AZURE_SCHEMES and parts.hostname:
        return [f"fs.azure.account.key.{parts.hostname}"]
    if scheme == "gs":
        return list(GCS_KEYFILES)
    return []


def storage_options(table: str, hadoop_conf: Mapping[str, str]) -> dict[str, str]:
    """delta-rs storage options for `table` from Hadoop settings (`spark.hadoop.` prefixes allowed)."""
    conf = hadoop_settings(hadoop_conf)
    parts = urlsplit(table)
    scheme = parts.scheme.lower()
    if scheme in S3_SCHEMES:
        return _s3_options(parts.netloc, conf)
    if scheme in AZURE_SCHEMES and parts.hostname and conf.get(f"fs.azure.account.key.{parts.hostname}"):
        return {"AZURE_STORAGE_ACCOUNT_NAME": parts.hostname.split(".", 1)[0],
                "AZURE_STORAGE_ACCOUNT_KEY": conf[f"fs.azure.account.key.{parts.hostname}"]}
    if scheme == "gs":
        keyfile = next((conf[k] for k in GCS_KEYFILES if conf.get(k)), None)
        return {"GOOGLE_SERVICE_ACCOUNT": keyfile} if keyfile else {}
    return {}


def _s3_options(bucket: str, conf: Mapping[str, str]) -> dict[str, str]:
    s3 = s3_settings(bucket, conf)
    options = {"AWS_ACCESS_KEY_ID": s3.access_key, "AWS_SECRET_ACCESS_KEY": s3.secret_key,
               "AWS_SESSION_TOKEN": s3.session_token, "AWS_REGION": s3.region or s3.aws_region}
    if s3.anonymous:
        options["AWS_SKIP_SIGNATURE"] = "true"
    options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = str(not s3.path_style).lower()
    if s3.endpoint:
        url = urlsplit(s3.endpoint)
        # delta-rs expects a virtual-hosted endpoint to name the bucket already.
        host = url.netloc if s3.path_style else f"{bucket}.{url.netloc}"
        options["AWS_ENDPOINT_URL"] = f"{url.scheme}://{host}{url.path}"
        if url.scheme == "http":
            options["AWS_ALLOW_HTTP"] = "true"
    return {k: v for k, v in options.items() if v}


def session_hadoop_conf(spark: Any, table: str) -> dict[str, str]:
    """The values of `hadoop_keys(table)` in a SparkSession's Hadoop configuration.

    Read as Delta reads it (the session's SQL conf over the context's Hadoop conf), with secrets
    resolved through Hadoop's credential providers, as S3A and ABFS resolve them.
    """
    keys = hadoop_keys(table)
    if not keys:
        return {}
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    values: dict[str, str] = {}
    for key in keys:
        if key.endswith(_SECRET_SUFFIXES):
            chars = conf.getPassword(key)
            value = spark._jvm.java.lang.String(chars) if chars is not None else None
        else:
            value = conf.getTrimmed(key)
        if value:
            values[key] = value
    return values


def delta_rs_location(table: str, conf: Any = None) -> tuple[str, dict[str, str]]:
    """delta-rs's URI and storage options for `table`, from a SparkSession or a mapping of Hadoop settings."""
    if conf is None:
        hadoop: Mapping[str, str] = {}
    elif isinstance(conf, Mapping):
        hadoop = conf
    else:
        hadoop = session_hadoop_conf(conf, table)
    return delta_rs_uri(table), storage_options(table, hadoop)
