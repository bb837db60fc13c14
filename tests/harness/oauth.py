"""Client settings for the OAUTHBEARER listeners of the `oauth_kafka` broker, written as a Java user writes them."""

from __future__ import annotations

from harness.oauth_kafka import OIDC, UNSECURED
from harness.oauth_server import SCOPE, OAuthServer
from kafka_spark.local.kafka import KafkaNode

MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
OIDC_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
CLIENT_ID = "kafka-spark-app"
# the OAuth server accepts any secret; this one is distinctive so the secrets checks can look for it
CLIENT_SECRET = "oidc-s3cret-7d1e9a"


def unsecured(node: KafkaNode, listener: str = UNSECURED, sub: str = "alice", scope: str = SCOPE) -> dict[str, str]:
    """Kafka's unsecured test token (`alg: none`) with the scope the listener requires."""
    return {"bootstrap.servers": node.address(listener), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.jaas.config": f'{MODULE} unsecuredLoginStringClaim_sub="{sub}" '
                                f'unsecuredLoginStringClaim_scope="{scope}";'}


def oidc(node: KafkaNode, server: OAuthServer, listener: str = OIDC, scope: str = SCOPE,
         **more: str) -> dict[str, str]:
    """OIDC client credentials against `server` (KIP-768), with Confluent-style SASL extensions."""
    return {"bootstrap.servers": node.address(listener), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "sasl.login.callback.handler.class": OIDC_HANDLER,
            "sasl.oauthbearer.token.endpoint.url": server.token_url,
            "sasl.jaas.config": f'{MODULE} clientId="{CLIENT_ID}" clientSecret="{CLIENT_SECRET}" scope="{scope}" '
                                'extension_logicalCluster="lkc-test";',
            **more}


def spark_options(props: dict[str, str]) -> dict[str, str]:
    """The same settings as `kafka.*` options of a Spark Kafka source or sink."""
    return {f"kafka.{k}": v for k, v in props.items()}
