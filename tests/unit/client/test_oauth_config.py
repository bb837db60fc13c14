"""OAUTHBEARER configurations as Java users write them: what is refused (a one-line `ConfigError` naming the
option, without a network call) and that the client secret never shows."""

from __future__ import annotations

import re

import pytest

from kafka_spark.client.auth.login import check_login, login_config
from kafka_spark.errors import ConfigError

OIDC_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
SECRET = "oidc-Secret-4f9a7c"


def oidc(**more: str) -> dict[str, str]:
    props = {
        "bootstrap.servers": "127.0.0.1:9092", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": OIDC_HANDLER,
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example/oauth2/token",
        "sasl.jaas.config": f'{MODULE} clientId="kafka-app" clientSecret="{SECRET}" scope="kafka" '
                            'extension_logicalCluster="lkc-1" extension_identityPoolId="pool-2";',
    }
    props.update(more)
    return props


def refused(props: dict[str, str], option: str) -> str:
    with pytest.raises(ConfigError, match=re.escape(option)) as info:
        login_config(props)
    message = str(info.value)
    assert "\n" not in message and SECRET not in message
    return message


def test_java_style_oidc_configuration_is_accepted():
    config = login_config(oidc())
    assert config.sasl_mechanism == "OAUTHBEARER"


def test_kafka_41_client_credential_properties_are_accepted():
    props = oidc(**{"sasl.jaas.config": f"{MODULE} ;", "sasl.oauthbearer.client.credentials.client.id": "app",
                    "sasl.oauthbearer.client.credentials.client.secret": SECRET,
                    "sasl.oauthbearer.jwt.retriever.class":
                        "org.apache.kafka.common.security.oauthbearer.ClientCredentialsJwtRetriever"})
    check_login(login_config(props))


def test_unknown_login_handler_class():
    refused(oidc(**{"sasl.login.callback.handler.class": "com.example.MyHandler"}),
            "sasl.login.callback.handler.class=com.example.MyHandler")


def test_missing_token_endpoint_url():
    props = oidc()
    del props["sasl.oauthbearer.token.endpoint.url"]
    refused(props, "sasl.oauthbearer.token.endpoint.url")


def test_token_endpoint_url_of_another_scheme():
    refused(oidc(**{"sasl.oauthbearer.token.endpoint.url": "ftp://idp/token"}), "sasl.oauthbearer.token.endpoint.url")


def test_jwt_bearer_retriever_needs_an_assertion_or_a_key():
    refused(oidc(**{"sasl.oauthbearer.jwt.retriever.class":
                    "org.apache.kafka.common.security.oauthbearer.JwtBearerJwtRetriever"}),
            "sasl.oauthbearer.assertion.file or sasl.oauthbearer.assertion.private.key.file")


def test_unknown_retriever_is_refused():
    refused(oidc(**{"sasl.oauthbearer.jwt.retriever.class": "com.example.Retriever"}),
            "sasl.oauthbearer.jwt.retriever.class=com.example.Retriever")


def test_file_retriever_needs_a_file_url():
    refused(oidc(**{"sasl.oauthbearer.jwt.retriever.class":
                    "org.apache.kafka.common.security.oauthbearer.FileJwtRetriever"}),
            "FileJwtRetriever")


def test_missing_client_secret():
    refused(oidc(**{"sasl.jaas.config": f'{MODULE} clientId="kafka-app";'}), ".client.secret")


@pytest.mark.parametrize("name", ["logical-cluster", "auth", "pool2"])
def test_bad_extension_names(name):
    jaas = f'{MODULE} clientId="a" clientSecret="{SECRET}" extension_{name}="v";'
    refused(oidc(**{"sasl.jaas.config": jaas}), f"extension_{name}")


def test_unsecured_login_needs_a_subject():
    refused({"bootstrap.servers": "h:1", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
             "sasl.jaas.config": f'{MODULE} unsecuredLoginStringClaim_scope="kafka";'},
            "unsecuredLoginStringClaim_sub")


def test_refresh_settings_outside_java_ranges():
    refused(oidc(**{"sasl.login.refresh.window.factor": "0.3"}), "sasl.login.refresh.window.factor")
    refused(oidc(**{"sasl.login.refresh.buffer.seconds": "7200"}), "sasl.login.refresh.buffer.seconds")


def test_plain_login_module_with_oauthbearer_is_refused():
    refused(oidc(**{"sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                        f'username="u" password="{SECRET}";'}), "sasl.jaas.config")


@pytest.mark.parametrize("props", [
    oidc(),
    oidc(**{"sasl.jaas.config": f"{MODULE} ;", "sasl.oauthbearer.client.credentials.client.id": "app",
            "sasl.oauthbearer.client.credentials.client.secret": SECRET}),
])
def test_client_secret_never_shows(props):
    config = login_config(props)
    assert SECRET not in repr(config) and SECRET not in str(config)
    assert SECRET not in repr(config.properties())
    assert config.redact(f"failed with {SECRET} in it") == "failed with [hidden] in it"
