"""The options and configurations that carry client, registry or store settings show no secret in repr or str (a
notebook cell, a debugger, a log line or a test's failure shows them), and still show everything else."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_spark.app.model import AppConfig
from kafka_spark.app.settings import LoadConfig, StreamConfig
from kafka_spark.app.source import Source
from kafka_spark.sink import LoadOptions, StreamOptions
from kafka_spark.spark.log.options import parse_log_options
from kafka_spark.spark.sink.options import parse_sink_options
from kafka_spark.spark.source.options import parse_source_options

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cr3t";'
KEY_PASSWORD = "k3y-pa55-47"
USER_INFO = "reg-user:reg-pa55-47"
AZURE_KEY = "QXp1cmUgYWNjb3VudCBrZXkgNDc="
S3A_KEY = "wJalrXUtnFEMI-K7MDENG-47"
GCS_KEY = "MIIEvQIBADANBgkqhkiG9w0BAQ-47"
SECRETS = {"JAAS config": JAAS, "JAAS password": "s3cr3t", "key password": KEY_PASSWORD, "registry user info":
           USER_INFO, "account key": AZURE_KEY, "s3a secret key": S3A_KEY, "gcs private key": GCS_KEY}

KAFKA = {"bootstrap.servers": "broker-1:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
         "sasl.jaas.config": JAAS, "ssl.key.password": KEY_PASSWORD}
REGISTRY = {"url": "http://registry:8081", "basic.auth.user.info": USER_INFO}
STORE = {"fs.azure.account.key.acct.dfs.core.windows.net": AZURE_KEY, "fs.s3a.bucket.lake.secret.key": S3A_KEY,
         "fs.gs.auth.service.account.private.key": GCS_KEY, "fs.s3a.endpoint": "http://minio:9000"}
OPTIONS = {**{f"kafka.{k}": v for k, v in KAFKA.items()}, "subscribe": "orders",
           "schema.registry.url": "http://registry:8081", "schema.registry.basic.auth.user.info": USER_INFO,
           "valueFormat": "avro"}


def load_options() -> LoadOptions:
    return LoadOptions(table="/lake/orders", kafka=dict(KAFKA), topics=["orders"], value_format="avro",
                       schema_registry=dict(REGISTRY), format_options={"valueSubject": "orders-value"},
                       publish_group="orders-mirror")


def stream_options() -> StreamOptions:
    return StreamOptions(table="/lake/orders", kafka=dict(KAFKA), topics=["orders"], value_format="avro",
                         schema_registry=dict(REGISTRY), max_offsets_per_trigger=100,
                         source_options={"kafka.ssl.key.password": KEY_PASSWORD, "minPartitions": "4"})


def app_settings(kind: type[AppConfig]) -> AppConfig:
    return kind(bootstrap_servers="broker-1:9093", topics=["orders"], kafka=dict(KAFKA), registry=dict(REGISTRY),
                schema_registry="http://user:pa55@registry:8081",
                topic_settings={"orders": {"value_subject": "orders-value"}})


CASES: dict[str, Any] = {
    "LoadOptions": load_options,
    "StreamOptions": stream_options,
    "KafkaSource": lambda: load_options().source,
    "Publishing": lambda: load_options().publishing,
    "Pacing": lambda: stream_options().pacing,
    "SourceOptions": lambda: parse_source_options(OPTIONS),
    "SinkOptions": lambda: parse_sink_options({k: v for k, v in OPTIONS.items() if k != "subscribe"}
                                              | {"topic": "orders"}),
    "LogOptions": lambda: parse_log_options({"path": "s3a://lake/kafka", "subscribe": "orders", **STORE,
                                             **{k: v for k, v in OPTIONS.items() if k != "subscribe"}}),
    "AppConfig": lambda: app_settings(AppConfig),
    "LoadConfig": lambda: app_settings(LoadConfig),
    "StreamConfig": lambda: app_settings(StreamConfig),
    "Source": lambda: Source(dict(KAFKA), ["orders"], None, "broker-1:9093", embedded=False),
}


# What each repr still shows: every case's secrets are replaced by the marker, the rest is readable.
VISIBLE = ("broker-1:9093", "SASL_SSL", "orders")
SHOWN = {"Publishing": ("broker-1:9093", "orders-mirror"), "Pacing": ("minPartitions", "'4'", "100"),
         "LogOptions": (*VISIBLE, "s3a://lake/kafka", "http://minio:9000",
                        "fs.azure.account.key.acct.dfs.core.windows.net")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_secret_in_repr_or_str_and_the_rest_shown(name: str) -> None:
    value = CASES[name]()
    assert type(value).__name__ == name
    for text in (repr(value), str(value), f"{value}", repr([value])):
        leaks = [what for what, secret in SECRETS.items() if secret in text]
        assert not leaks, f"{name} shows {leaks}"
    text = repr(value)
    assert text.startswith(f"{name}(") and "[hidden]" in text, text
    missing = [v for v in SHOWN.get(name, VISIBLE) if v not in text]
    assert not missing, text
