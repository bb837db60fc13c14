"""delta-rs table URIs and storage options derived from the Hadoop configuration the user gave Spark.

The credentials a user configured for Spark stay the only copy: what delta-rs needs is read from the
same Hadoop keys. Mapped, per store:

- `s3a://` (and `s3n://`, `s3://`): `fs.s3a.access.key`, `secret.key`, `session.token`, `endpoint`,
  `endpoint.region`, `path.style.access`, `connection.ssl.enabled`, and the anonymous credentials
  provider; a per-bucket `fs.s3a.bucket.<bucket>.<key>` wins over `fs.s3a.<key>`, as in S3A. The URI
  becomes `s3://`. Without keys delta-rs falls back to its own chain (environment, profile, instance
  role), as S3A's default providers do.
- `abfss://` / `abfs://`: the account key `fs.azure.account.key.<account>.dfs.core.windows.net`.
- `gs://`: the service-account JSON key file (`fs.gs.auth.service.account.json.keyfile`, or the older
  `google.cloud.auth.service.account.json.keyfile`).

Anything else (OAuth, SAS tokens, custom credential providers, `hdfs://`, local paths) passes through
with no options, leaving delta-rs to its own defaults.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

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


def storage_options(table: str, hadoop_conf: Mapping[str, str]) -> dict[str, str]:
    """delta-rs storage options for `table` from Hadoop settings (`spark.hadoop.` prefixes allowed)."""
    conf = {k.removeprefix("spark.hadoop."): v.strip() for k, v in hadoop_conf.items() if v is not None}
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


def _s3_options(bucket: str, conf: Mapping[str, str]) -> dict[str, str]:
    def get(key: str) -> str:
        return conf.get(f"fs.s3a.bucket.{bucket}.{key}") or conf.get(f"fs.s3a.{key}") or ""

    options = {"AWS_ACCESS_KEY_ID": get("access.key"), "AWS_SECRET_ACCESS_KEY": get("secret.key"),
               "AWS_SESSION_TOKEN": get("session.token"), "AWS_REGION": get("endpoint.region")}
    if _ANONYMOUS_PROVIDER in get("aws.credentials.provider"):
        options["AWS_SKIP_SIGNATURE"] = "true"
    path_style = get("path.style.access").lower() == "true"
    options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = str(not path_style).lower()
    endpoint = get("endpoint")
    if endpoint:
        # S3A takes a bare host and picks the scheme from connection.ssl.enabled (default true).
        if "://" not in endpoint:
            ssl = get("connection.ssl.enabled").lower() != "false"
            endpoint = f"{'https' if ssl else 'http'}://{endpoint}"
        url = urlsplit(endpoint)
        aws = _AWS_ENDPOINT.match(url.hostname or "")
        if aws:
            options["AWS_REGION"] = options["AWS_REGION"] or aws.group("region") or "us-east-1"
        else:
            # delta-rs expects a virtual-hosted endpoint to name the bucket already.
            host = url.netloc if path_style else f"{bucket}.{url.netloc}"
            options["AWS_ENDPOINT_URL"] = f"{url.scheme}://{host}{url.path.rstrip('/')}"
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
