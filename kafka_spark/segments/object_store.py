"""pyarrow file systems for object stores, from the Hadoop keys users already give Spark.

The credentials a user configured for Spark stay the only copy: what pyarrow needs to reach a store
(Kafka log directories for pykafka-log, the files kept beside a Delta table) is read from the same
Hadoop keys, with the AWS SDK's environment variables as fallbacks for S3A's. S3 follows S3A's keys
(per-bucket ones first); Azure takes the account key; GCS uses Google's default credentials.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import pyarrow.fs

S3_SCHEMES = ("s3a", "s3n", "s3")
AZURE_SCHEMES = ("abfss", "abfs")
GCS_KEYFILES = ("fs.gs.auth.service.account.json.keyfile", "google.cloud.auth.service.account.json.keyfile")
_ANONYMOUS_PROVIDER = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"
# An AWS endpoint names its region (s3.eu-west-1.amazonaws.com).
_AWS_ENDPOINT = re.compile(r"^s3[.-](?:(?P<region>[a-z0-9-]+)\.)?amazonaws\.com$")


def hadoop_settings(conf: Mapping[str, str]) -> dict[str, str]:
    """Hadoop keys without a `spark.hadoop.` prefix, their values trimmed (unset ones dropped)."""
    return {k.removeprefix("spark.hadoop."): v.strip() for k, v in conf.items() if v is not None}


@dataclass(frozen=True)
class S3Settings:
    """What S3A would use for one bucket, resolved from the Hadoop keys (per-bucket keys first)."""

    access_key: str
    secret_key: str
    session_token: str
    region: str
    anonymous: bool
    path_style: bool
    endpoint: str  # "scheme://host[:port][/path]", or "" for AWS's own endpoints
    aws_region: str  # the region an AWS endpoint names ("" when it names none)


def s3_settings(bucket: str, conf: Mapping[str, str]) -> S3Settings:
    """S3A's settings for `bucket` from Hadoop keys (already without a `spark.hadoop.` prefix)."""
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
    return S3Settings(
        access_key=get("access.key"), secret_key=get("secret.key"), session_token=get("session.token"),
        region=get("endpoint.region"), anonymous=_ANONYMOUS_PROVIDER in get("aws.credentials.provider"),
        path_style=get("path.style.access").lower() == "true", endpoint=endpoint.rstrip("/"), aws_region=aws_region)


def arrow_filesystem(table: str, hadoop_conf: Mapping[str, str]) -> tuple[pyarrow.fs.FileSystem, str]:
    """A pyarrow file system for `table`'s store from Hadoop settings, and the table's path in it.

    S3 follows S3A's keys as `storage_options` does; Azure takes the account key; GCS uses Google's
    default credentials (`GOOGLE_APPLICATION_CREDENTIALS`); anything else is left to pyarrow's
    `FileSystem.from_uri` (`hdfs://` needs libhdfs there).
    """
    import pyarrow.fs as pafs

    conf = hadoop_settings(hadoop_conf)
    parts = urlsplit(table)
    scheme = parts.scheme.lower()
    if scheme in S3_SCHEMES:
        s3 = s3_settings(parts.netloc, conf)
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
    if scheme in AZURE_SCHEMES and parts.hostname:
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
