"""delta-rs table URIs and storage options, and pyarrow file systems, from the Hadoop settings the user gave Spark.

The credentials a user configured for Spark stay the only copy: what delta-rs (the table's log) and
pyarrow (the files kept beside the table, when there is no Spark) need is read from the same Hadoop
keys. Mapped, per store:

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

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import pyarrow.fs

_S3_SCHEMES = ("s3a", "s3n", "s3")
_AZURE_SCHEMES = ("abfss", "abfs")
_GCS_KEYFILES = ("fs.gs.auth.service.account.json.keyfile", "google.cloud.auth.service.account.json.keyfile")
# S3A options read per bucket; the secrets among them go through Hadoop's credential providers.
_S3A_KEYS = ("access.key", "secret.key", "session.token", "endpoint", "endpoint.region", "path.style.access",
             "connection.ssl.enabled", "aws.credentials.provider")
_SECRET_SUFFIXES = (".access.key", ".secret.key", ".session.token", ".dfs.core.windows.net")
_ANONYMOUS_PROVIDER = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
# An AWS endpoint names its region (s3.eu-west-1.amazonaws.com); delta-rs builds these from the region.
_AWS_ENDPOINT = re.compile(r"^s3[.-](?:(?P<region>[a-z0-9-]+)\.)?amazonaws\.com$")


def delta_rs_uri(table: str) -> str:
    """The table's URI as delta-rs spells it: `s3a://` and `s3n://` become `s3://`; others are unchanged."""
    scheme, sep, rest = table.partition("://")
    return f"s3://{rest}" if sep and scheme.lower() in _S3_SCHEMES else table


def hadoop_keys(table: str) -> list[str]:
    """The Hadoop configuration keys `storage_options` reads for `table`."""
    parts = urlsplit(table)
    scheme = parts.scheme.lower()
    if scheme in _S3_SCHEMES:
        return [f"fs.s3a.{prefix}{key}" for key in _S3A_KEYS for prefix in (f"bucket.{parts.netloc}.", "")]
    if scheme in _AZURE_SCHEMES and parts.hostname:
        return [f"fs.azure.account.key.{parts.hostname}"]
    if scheme == "gs":
        return list(_GCS_KEYFILES)
    return []


def _hadoop(conf: Mapping[str, str]) -> dict[str, str]:
    return {k.removeprefix("spark.hadoop."): v.strip() for k, v in conf.items() if v is not None}


def storage_options(table: str, hadoop_conf: Mapping[str, str]) -> dict[str, str]:
    """delta-rs storage options for `table` from Hadoop settings (`spark.hadoop.` prefixes allowed)."""
    conf = _hadoop(hadoop_conf)
    parts = urlsplit(table)
    scheme = parts.scheme.lower()
    if scheme in _S3_SCHEMES:
        return _s3_options(parts.netloc, conf)
    if scheme in _AZURE_SCHEMES and parts.hostname and conf.get(f"fs.azure.account.key.{parts.hostname}"):
        return {"AZURE_STORAGE_ACCOUNT_NAME": parts.hostname.split(".", 1)[0],
                "AZURE_STORAGE_ACCOUNT_KEY": conf[f"fs.azure.account.key.{parts.hostname}"]}
    if scheme == "gs":
        keyfile = next((conf[k] for k in _GCS_KEYFILES if conf.get(k)), None)
        return {"GOOGLE_SERVICE_ACCOUNT": keyfile} if keyfile else {}
    return {}


@dataclass(frozen=True)
class _S3Settings:
    """What S3A would use for one bucket, resolved from the Hadoop keys (per-bucket keys first)."""

    access_key: str
    secret_key: str
    session_token: str
    region: str
    anonymous: bool
    path_style: bool
    endpoint: str  # "scheme://host[:port][/path]", or "" for AWS's own endpoints
    aws_region: str  # the region an AWS endpoint names ("" when it names none)


def _s3_settings(bucket: str, conf: Mapping[str, str]) -> _S3Settings:
    def get(key: str) -> str:
        return conf.get(f"fs.s3a.bucket.{bucket}.{key}") or conf.get(f"fs.s3a.{key}") or ""

    endpoint, aws_region = get("endpoint"), ""
    if endpoint:
        # S3A takes a bare host and picks the scheme from connection.ssl.enabled (default true).
        if "://" not in endpoint:
            ssl = get("connection.ssl.enabled").lower() != "false"
            endpoint = f"{'https' if ssl else 'http'}://{endpoint}"
        aws = _AWS_ENDPOINT.match(urlsplit(endpoint).hostname or "")
        if aws:
            endpoint, aws_region = "", aws.group("region") or "us-east-1"
    return _S3Settings(
        access_key=get("access.key"), secret_key=get("secret.key"), session_token=get("session.token"),
        region=get("endpoint.region"), anonymous=_ANONYMOUS_PROVIDER in get("aws.credentials.provider"),
        path_style=get("path.style.access").lower() == "true", endpoint=endpoint.rstrip("/"), aws_region=aws_region)


def _s3_options(bucket: str, conf: Mapping[str, str]) -> dict[str, str]:
    s3 = _s3_settings(bucket, conf)
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


def arrow_filesystem(table: str, hadoop_conf: Mapping[str, str]) -> tuple[pyarrow.fs.FileSystem, str]:
    """A pyarrow file system for `table`'s store from Hadoop settings, and the table's path in it.

    S3 follows S3A's keys as `storage_options` does; Azure takes the account key; GCS uses Google's
    default credentials (`GOOGLE_APPLICATION_CREDENTIALS`); anything else is left to pyarrow's
    `FileSystem.from_uri` (`hdfs://` needs libhdfs there).
    """
    import pyarrow.fs as pafs

    conf = _hadoop(hadoop_conf)
    parts = urlsplit(table)
    scheme = parts.scheme.lower()
    if scheme in _S3_SCHEMES:
        s3 = _s3_settings(parts.netloc, conf)
        kwargs: dict[str, Any] = {"region": s3.region or s3.aws_region or None}
        if s3.anonymous:
            kwargs["anonymous"] = True
        elif s3.access_key:
            kwargs.update(access_key=s3.access_key, secret_key=s3.secret_key,
                          session_token=s3.session_token or None)
        if s3.endpoint:
            url = urlsplit(s3.endpoint)
            kwargs.update(endpoint_override=f"{url.netloc}{url.path}", scheme=url.scheme,
                          force_virtual_addressing=not s3.path_style)
        return pafs.S3FileSystem(**kwargs), f"{parts.netloc}{parts.path}"
    if scheme in _AZURE_SCHEMES and parts.hostname:
        container = parts.username or ""
        key = conf.get(f"fs.azure.account.key.{parts.hostname}")
        account = parts.hostname.split(".", 1)[0]
        return pafs.AzureFileSystem(account_name=account, account_key=key or None), f"{container}{parts.path}"
    if scheme == "gs":
        return pafs.GcsFileSystem(), f"{parts.netloc}{parts.path}"
    return pafs.FileSystem.from_uri(table)


# The AWS SDK's standard variables, as fallbacks for S3A's keys (S3A's default credential chain reads the
# first three itself).
_AWS_ENVIRONMENT = (
    ("AWS_ACCESS_KEY_ID", "fs.s3a.access.key"), ("AWS_SECRET_ACCESS_KEY", "fs.s3a.secret.key"),
    ("AWS_SESSION_TOKEN", "fs.s3a.session.token"), ("AWS_REGION", "fs.s3a.endpoint.region"),
    ("AWS_DEFAULT_REGION", "fs.s3a.endpoint.region"), ("AWS_ENDPOINT_URL_S3", "fs.s3a.endpoint"),
    ("AWS_ENDPOINT_URL", "fs.s3a.endpoint"),
)


def environment_hadoop_conf(environ: Mapping[str, str]) -> dict[str, str]:
    """S3A keys from the AWS variables of `environ` (the first variable set for a key wins)."""
    conf: dict[str, str] = {}
    for variable, key in _AWS_ENVIRONMENT:
        if environ.get(variable) and key not in conf:
            conf[key] = environ[variable]
    return conf


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
