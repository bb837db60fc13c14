"""`kafka-spark offsets --command-config FILE` with the OAUTHBEARER properties a Java user keeps in that file."""

from __future__ import annotations

import json

from harness.oauth import CLIENT_SECRET, oidc, unsecured
from harness.oauth_kafka import OIDC

from kafka_spark.cli.main import main
from kafka_spark.client import Producer


def _properties_file(path, props: dict[str, str]):
    # Java's properties syntax; the JAAS line's quotes and spaces go in as they are
    lines = [f"{k}={v}" for k, v in props.items() if k != "bootstrap.servers"]
    path.write_text("# OAUTHBEARER client settings\n" + "\n".join(lines) + "\n")
    return path


def test_offsets_over_oidc_from_a_command_config_file(oauth_kafka, oauth_server, topic_name, tmp_path, capsys):
    oauth_kafka.create_topic(topic_name, partitions=2)
    with Producer({"bootstrap.servers": oauth_kafka.bootstrap}) as producer:
        for i in range(6):
            producer.send(topic_name, b"x", partition=i % 2)
        producer.flush(30)
    props = oidc(oauth_kafka, oauth_server)
    config = _properties_file(tmp_path / "client.properties", props)
    code = main(["offsets", "--bootstrap-server", props["bootstrap.servers"], "--command-config", str(config),
                 "--topic", topic_name, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out) == {topic_name: {"0": 3, "1": 3}}
    assert CLIENT_SECRET not in out.out + out.err


def test_a_refused_token_is_one_line_on_stderr(oauth_kafka, topic_name, tmp_path, capsys):
    props = unsecured(oauth_kafka, listener=OIDC)
    config = _properties_file(tmp_path / "client.properties", props)
    code = main(["offsets", "--bootstrap-server", props["bootstrap.servers"], "--command-config", str(config),
                 "--topic", topic_name])
    err = capsys.readouterr().err.strip()
    assert code == 1  # the cluster refused: 1, as for every data or cluster error (2 is for settings)
    assert err.startswith("kafka-spark: error: SASL_AUTHENTICATION_FAILED") and "\n" not in err
    assert "status=invalid_token" in err and "OAUTHBEARER" in err
