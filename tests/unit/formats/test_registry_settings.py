"""Schema-registry settings from `schema.registry.*` options: defaults, parsing, refusals with a suggestion,
and secrets that never show in repr, str or an error."""

from __future__ import annotations

import pickle

import pytest

from kafka_spark.errors import ConfigError
from kafka_spark.formats.registry.settings import SECRET_OPTIONS, RegistrySettings, registry_settings

PASSWORD = "pw-5ecr3t-91c"
TOKEN = "tok-5ecr3t-77a"
KEY_PASSWORD = "kp-5ecr3t-e40"


def test_no_url_is_no_registry() -> None:
    assert registry_settings({}) is None
    assert registry_settings({"kafka.bootstrap.servers": "b:9092", "valueFormat": "avro"}) is None
    # the caller says what a registry option without a URL is missing; unknown names are refused even so
    assert registry_settings({"schema.registry.max.retries": "2"}) is None
    with pytest.raises(ConfigError, match=r"did you mean 'schema\.registry\.max\.retries'"):
        registry_settings({"schema.registry.max.retry": "2"})


def test_defaults() -> None:
    settings = registry_settings({"schema.registry.url": "http://sr:8081"})
    assert settings == RegistrySettings(urls=("http://sr:8081",))
    assert (settings.timeout_ms, settings.max_retries, settings.retry_backoff_ms, settings.retry_backoff_max_ms,
            settings.check_hostname, settings.username, settings.bearer_token) == (30000, 3, 1000, 20000, True,
                                                                                   None, None)


def test_every_option_any_case() -> None:
    settings = registry_settings({
        "Schema.Registry.URL": " https://a:8081/ , https://b.example/prefix/ ",
        "SCHEMA.REGISTRY.BASIC.AUTH.USER.INFO": f"key:{PASSWORD}",
        "schema.registry.basic.auth.credentials.source": "user_info",
        "schema.registry.ssl.ca.location": "/ca.pem",
        "schema.registry.ssl.certificate.location": "/client.pem",
        "schema.registry.ssl.key.location": "/client.key",
        "schema.registry.ssl.key.password": KEY_PASSWORD,
        "schema.registry.ssl.endpoint.identification.algorithm": "",
        "schema.registry.request.timeout.ms": "2500",
        "schema.registry.max.retries": "0",
        "schema.registry.retry.backoff.ms": "10",
        "schema.registry.retry.backoff.max.ms": "40",
        "kafka.bootstrap.servers": "ignored:9092",
    })
    assert settings == RegistrySettings(
        urls=("https://a:8081", "https://b.example/prefix"), username="key", password=PASSWORD,
        ca_location="/ca.pem", certificate_location="/client.pem", key_location="/client.key",
        key_password=KEY_PASSWORD, check_hostname=False, timeout_ms=2500, max_retries=0, retry_backoff_ms=10,
        retry_backoff_max_ms=40)


def test_bearer_token_and_cloud_headers() -> None:
    settings = registry_settings({"schema.registry.url": "https://sr", "schema.registry.bearer.auth.token": TOKEN,
                                  "schema.registry.bearer.auth.credentials.source": "STATIC_TOKEN",
                                  "schema.registry.bearer.auth.logical.cluster": "lsrc-1",
                                  "schema.registry.bearer.auth.identity.pool.id": "pool-2"})
    assert (settings.bearer_token, settings.logical_cluster, settings.identity_pool_id) == (TOKEN, "lsrc-1", "pool-2")


def test_user_info_from_the_url() -> None:
    url = f"https://key:{PASSWORD.replace('-', '%2D')}@sr.example:443/api"
    for options in ({"schema.registry.url": url, "schema.registry.basic.auth.credentials.source": "URL"},
                    {"schema.registry.url": url}):
        settings = registry_settings(options)
        assert settings.urls == ("https://sr.example:443/api",)
        assert (settings.username, settings.password) == ("key", PASSWORD)


@pytest.mark.parametrize(("options", "message"), [
    ({"schema.registry.urls": "http://a"}, "unknown schema registry option 'schema.registry.urls'; did you mean "
                                           "'schema.registry.url'"),
    ({"schema.registry.url": "http://a", "schema.registry.basic.auth.userinfo": "u:p"},
     "did you mean 'schema.registry.basic.auth.user.info'"),
    ({"schema.registry.url": "http://a", "schema.registry.ssl.truststore.location": "/x"},
     "unknown schema registry option 'schema.registry.ssl.truststore.location'"),
    ({"schema.registry.url": "ftp://a"}, "URL number 1 is not an http:// or https:// URL"),
    ({"schema.registry.url": "http://a,sr:8081"}, "URL number 2 is not an http"),
    ({"schema.registry.url": " , "}, "holds no URL"),
    ({"schema.registry.url": "http://a", "schema.registry.basic.auth.user.info": "nopassword"},
     "must be 'user:password'"),
    ({"schema.registry.url": "http://a", "schema.registry.basic.auth.credentials.source": "URL"},
     "needs user:password@ in schema.registry.url"),
    ({"schema.registry.url": "http://a", "schema.registry.basic.auth.credentials.source": "SASL_INHERIT"},
     "must be USER_INFO or URL"),
    ({"schema.registry.url": f"http://u:{PASSWORD}@a", "schema.registry.basic.auth.user.info": f"u:{PASSWORD}"},
     "carries user info too"),
    ({"schema.registry.url": "http://a", "schema.registry.basic.auth.user.info": f"u:{PASSWORD}",
      "schema.registry.bearer.auth.token": TOKEN}, "not both"),
    ({"schema.registry.url": "http://a", "schema.registry.bearer.auth.credentials.source": "OAUTHBEARER"},
     "supports only STATIC_TOKEN"),
    ({"schema.registry.url": "http://a", "schema.registry.ssl.key.location": "/k"},
     "need schema.registry.ssl.certificate.location"),
    ({"schema.registry.url": "http://a", "schema.registry.ssl.endpoint.identification.algorithm": "none"},
     "must be 'https'"),
    ({"schema.registry.url": "http://a", "schema.registry.request.timeout.ms": "0"}, "between 1 and"),
    ({"schema.registry.url": "http://a", "schema.registry.max.retries": "three"}, "must be an integer"),
    ({"schema.registry.url": "http://a", "schema.registry.retry.backoff.ms": "-1"}, "between 0 and"),
])
def test_refusals(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("'", "'")) as caught:
        registry_settings(options)
    assert PASSWORD not in str(caught.value) and TOKEN not in str(caught.value)


def test_secrets_stay_hidden_and_settings_travel() -> None:
    basic = registry_settings({"schema.registry.url": f"https://key:{PASSWORD}@a:1,https://b:2",
                               "schema.registry.ssl.certificate.location": "/c.pem",
                               "schema.registry.ssl.key.password": KEY_PASSWORD})
    bearer = registry_settings({"schema.registry.url": "https://a", "schema.registry.bearer.auth.token": TOKEN})
    for settings in (basic, bearer):
        for text in (repr(settings), str(settings), f"{settings}", repr([settings])):
            assert PASSWORD not in text and TOKEN not in text and KEY_PASSWORD not in text
            assert "key:" not in text
        assert pickle.loads(pickle.dumps(settings)) == settings
        assert hash(settings) == hash(pickle.loads(pickle.dumps(settings)))
    assert "auth='basic'" in repr(basic) and "https://a:1" in repr(basic) and "auth='bearer'" in repr(bearer)


def test_secret_options_name_every_secret() -> None:
    assert set(SECRET_OPTIONS) == {"schema.registry.url", "schema.registry.basic.auth.user.info",
                                   "schema.registry.bearer.auth.token", "schema.registry.ssl.key.password"}
