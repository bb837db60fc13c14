"""Which settings are secret (one rule for plans and reprs): every credential-bearing Hadoop key of the object
stores, Kafka's secret client properties and the registry's secret settings, in each spelling the project meets
them; and none of the settings a user needs to see."""

from __future__ import annotations

import re

import pytest

from kafka_spark.client.properties import REDACTED, SECRET_KEYS
from kafka_spark.formats.registry.settings import SECRET_OPTIONS
from kafka_spark.spark.redaction import (
    SECRET_OPTIONS_REGEX,
    SPARK_DEFAULT_OPTIONS_REGEX,
    SPARK_DEFAULT_SECRET_REGEX,
    is_secret,
    redacted,
    redaction_regex,
)

# The credential-bearing keys of Hadoop's S3A, ABFS, WASB, ADLS and GCS connectors (their documentation and
# Hadoop's hadoop.security.sensitive-config-keys), with per-bucket and per-account forms.
HADOOP_SECRETS = [
    # S3A, and the older s3n/s3 names
    "fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token", "fs.s3a.session.key",
    "fs.s3a.bucket.lake.secret.key", "fs.s3a.bucket.my.dotted.bucket.secret.key", "fs.s3a.bucket.lake.session.token",
    "fs.s3a.bucket.lake.access.key", "fs.s3a.encryption.key", "fs.s3a.bucket.lake.encryption.key",
    "fs.s3a.server-side-encryption.key", "fs.s3a.server-side-encryption-key",
    "fs.s3a.bucket.lake.server-side-encryption.key", "fs.s3n.awsSecretAccessKey", "fs.s3.awsSecretAccessKey",
    # ABFS and WASB: account keys, OAuth client secrets, user passwords and refresh tokens (also per account),
    # SAS tokens, customer-provided encryption keys
    "fs.azure.account.key.acct.dfs.core.windows.net", "fs.azure.account.key.acct.blob.core.windows.net",
    "fs.azure.account.oauth2.client.secret", "fs.azure.account.oauth2.client.secret.acct.dfs.core.windows.net",
    "fs.azure.account.oauth2.user.password", "fs.azure.account.oauth2.refresh.token",
    "fs.azure.sas.fixed.token", "fs.azure.sas.container.acct.blob.core.windows.net",
    "fs.azure.encryption.encoded.client-provided-key", "fs.azure.encryption.encoded.client-provided-key-sha",
    # ADLS Gen1
    "fs.adl.oauth2.credential", "fs.adl.oauth2.refresh.token", "dfs.adls.oauth2.credential",
    # GCS: an inline private key and its id, key files, OAuth client secrets, customer-supplied keys, the proxy's
    "fs.gs.auth.service.account.private.key", "fs.gs.auth.service.account.private.key.id",
    "fs.gs.auth.service.account.json.keyfile", "fs.gs.auth.service.account.keyfile", "fs.gs.auth.client.secret",
    "google.cloud.auth.service.account.json.keyfile", "google.cloud.auth.service.account.private.key",
    "google.cloud.auth.client.secret", "fs.gs.encryption.key", "fs.gs.proxy.password",
    # other stores' connectors
    "fs.oss.accessKeySecret", "fs.oss.securityToken", "fs.cosn.userinfo.secretKey", "fs.obs.secret.key",
    "fs.swift.service.rackspace.password",
]
# What the store settings and a load's options hold besides secrets: a user must be able to read them.
NOT_SECRET = [
    "fs.s3a.endpoint", "fs.s3a.endpoint.region", "fs.s3a.path.style.access", "fs.s3a.connection.ssl.enabled",
    "fs.s3a.aws.credentials.provider", "fs.s3a.bucket.lake.endpoint", "fs.s3a.security.credential.provider.path",
    "hadoop.security.credential.provider.path", "fs.azure.account.auth.type", "fs.azure.account.oauth.provider.type",
    "fs.azure.account.oauth2.client.id", "fs.azure.account.oauth2.client.endpoint",
    "fs.azure.account.keyprovider.acct.dfs.core.windows.net", "fs.gs.project.id", "fs.defaultFS",
    "path", "subscribe", "assign", "startingOffsets", "bootstrap.servers", "kafka.bootstrap.servers",
    "kafka.security.protocol", "kafka.sasl.mechanism", "kafka.ssl.keystore.location", "kafka.isolation.level",
    "schema.registry.ssl.ca.location", "valueFormat",
]
# Spark matches option values too: a log dir's URI must stay visible.
NOT_SECRET_VALUES = ["s3a://lake/kafka/broker-*", "abfss://logs@acct.dfs.core.windows.net/kafka",
                     "wasbs://logs@acct.blob.core.windows.net/kafka", "gs://bucket/kafka", "/var/lib/kafka/data"]


@pytest.mark.parametrize("key", HADOOP_SECRETS)
def test_every_hadoop_credential_key_is_secret_in_each_spelling(key: str) -> None:
    spark_pattern = re.compile(SECRET_OPTIONS_REGEX)  # Java and Python agree on this subset of the syntax
    for spelling in (key, key.upper(), f"spark.hadoop.{key}"):
        assert is_secret(spelling), spelling
        # as a pykafka-log option or a session setting, Spark's pattern with ours hides it
        assert spark_pattern.search(spelling), spelling


def test_the_account_key_is_one_spark_would_show_without_ours() -> None:
    for key in ("fs.azure.account.key.acct.dfs.core.windows.net", "fs.gs.auth.service.account.private.key",
                "fs.azure.sas.container.acct.blob.core.windows.net", "fs.adl.oauth2.credential"):
        assert not re.search(SPARK_DEFAULT_SECRET_REGEX, key) and not re.search(SPARK_DEFAULT_OPTIONS_REGEX, key)
        assert re.search(redaction_regex(None), key)


def test_kafka_and_registry_secrets_bare_and_prefixed() -> None:
    for key in SECRET_KEYS:
        assert is_secret(key) and is_secret(f"kafka.{key}") and is_secret(f"KAFKA.{key.upper()}"), key
    for option in SECRET_OPTIONS:
        assert is_secret(option) and is_secret(option.removeprefix("schema.registry.")), option


@pytest.mark.parametrize("name", NOT_SECRET + NOT_SECRET_VALUES)
def test_what_a_user_must_see_is_not_secret(name: str) -> None:
    assert not is_secret(name)
    assert not re.search(SECRET_OPTIONS_REGEX, name)


def test_redacted_hides_the_values_of_secret_settings_only_nested_too() -> None:
    settings = {"bootstrap.servers": "b:9092", "sasl.jaas.config": 'x required password="s3cr3t";',
                "fs.azure.account.key.acct.dfs.core.windows.net": "azkey", "unset.password": None, 3: "three",
                "per.topic": {"ssl.key.password": "kp", "valueSubject": "orders-value"}}
    assert redacted(settings) == {"bootstrap.servers": "b:9092", "sasl.jaas.config": REDACTED,
                                  "fs.azure.account.key.acct.dfs.core.windows.net": REDACTED,
                                  "unset.password": None, 3: "three",
                                  "per.topic": {"ssl.key.password": REDACTED, "valueSubject": "orders-value"}}
