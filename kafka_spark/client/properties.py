"""The client's properties under the Java client's names: each one's parser, default and attribute.

Unknown names are refused (with a close match suggested) except Java client settings that have no
meaning here (`IGNORED_KEYS`: deserializers, ...), which are accepted and ignored so that existing
property files work unchanged. `ClientConfig` (config.py) validates a set of them.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kafka_spark.errors import ConfigError
from kafka_spark.zookeeper import settings as zk_settings

REDACTED = "[hidden]"
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI", "AWS_MSK_IAM")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")
ACKS = ("all", "-1", "0", "1")

SECRET_KEYS = frozenset({
    "sasl.password", "sasl.jaas.config", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.password", "ssl.keystore.key", "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.passphrase", *zk_settings.SECRET_KEYS,
})
# JAAS options whose values are secrets (matched by part of the name, any case)
SECRET_OPTION_PARTS = ("password", "secret", "token", "passphrase", "accesskey", "keystore.key")

# Java client settings that do not apply to this client; accepted so property files can be shared.
IGNORED_KEYS = frozenset({
    "key.deserializer", "value.deserializer", "key.serializer", "value.serializer", "auto.offset.reset",
    "enable.auto.commit", "auto.commit.interval.ms", "max.poll.records", "interceptor.classes",
    "metric.reporters", "metrics.num.samples", "metrics.sample.window.ms", "metrics.recording.level",
    "check.crcs", "client.dns.lookup",
    "partitioner.class", "partition.assignment.strategy", "exclude.internal.topics",
    "ssl.protocol", "ssl.enabled.protocols", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation", "ssl.provider", "ssl.engine.factory.class",
    "default.api.timeout.ms.ignored", "client.rack",
    "enable.metrics.push", "auto.include.jmx.reporter",
    # token validation settings of brokers, which Java's client also accepts; a client does not validate
    "sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.clock.skew.seconds", "sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer",
})


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[str, Any], int]:
    def parse(key: str, value: Any) -> int:
        if isinstance(value, bool):
            raise ConfigError(f"{key} must be an integer, got {value!r}")
        try:
            number = value if isinstance(value, int) else int(str(value).strip())
        except ValueError:
            raise ConfigError(f"{key} must be an integer, got {value!r}") from None
        if lo is not None and number < lo:
            raise ConfigError(f"{key} must be at least {lo}, got {number}")
        if hi is not None and number > hi:
            raise ConfigError(f"{key} must be at most {hi}, got {number}")
        return number

    return parse


def _float(lo: float, hi: float) -> Callable[[str, Any], float]:
    def parse(key: str, value: Any) -> float:
        try:
            number = float(str(value).strip())
        except ValueError:
            raise ConfigError(f"{key} must be a number, got {value!r}") from None
        if not lo <= number <= hi:
            raise ConfigError(f"{key} must be between {lo} and {hi}, got {number}")
        return number

    return parse


def parse_bool(key: str, value: Any) -> bool:
    """`value` as a boolean (a bool, or true/false, yes/no, 1/0 in any case); `ConfigError` naming `key`."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ConfigError(f"{key} must be true or false, got {value!r}")


def _choice(options: Iterable[str], upper: bool = False) -> Callable[[str, Any], str]:
    allowed = tuple(options)

    def parse(key: str, value: Any) -> str:
        text = str(value).strip()
        text = text.upper() if upper else text.lower()
        if text not in allowed:
            raise ConfigError(f"{key} must be one of {', '.join(allowed)}; got {value!r}")
        return text

    return parse


def _str(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key} must be a string, got {type(value).__name__}")
    return value


def _optional_str(key: str, value: Any) -> str | None:
    return None if value is None else _str(key, value)


def _acks(key: str, value: Any) -> int:
    text = str(value).strip().lower()
    if text not in ACKS:
        raise ConfigError(f"{key} must be one of all, -1, 0, 1; got {value!r}")
    return -1 if text in ("all", "-1") else int(text)


def _servers(key: str, value: Any) -> tuple[tuple[str, int], ...]:
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    out = []
    for item in items:
        item = str(item).strip()
        if not item:
            continue
        out.append(parse_host_port(item, key))
    if not out:
        raise ConfigError(f"{key} must list at least one host:port")
    return tuple(out)


def parse_host_port(text: str, key: str = "bootstrap.servers") -> tuple[str, int]:
    """Split ``host:port`` (``[v6addr]:port`` for IPv6); a `ConfigError` names `key` otherwise."""
    match = re.fullmatch(r"(?:[A-Za-z]+://)?(\[[^\]]+\]|[^:\s]+):(\d+)", text.strip())
    if not match:
        raise ConfigError(f"{key}: {text!r} is not host:port")
    host, port = match.group(1).strip("[]"), int(match.group(2))
    if not 0 < port < 65536:
        raise ConfigError(f"{key}: port {port} of {text!r} is out of range")
    return host, port


@dataclass(frozen=True)
class Property:
    parse: Callable[[str, Any], Any]
    default: Any
    attr: str


_MAX_INT = 2**31 - 1

PROPERTIES: dict[str, Property] = {
    "bootstrap.servers": Property(_servers, None, "bootstrap_servers"),
    "client.id": Property(_str, "kafka-spark", "client_id"),
    "security.protocol": Property(_choice(SECURITY_PROTOCOLS, upper=True), "PLAINTEXT", "security_protocol"),
    "sasl.mechanism": Property(_choice(SASL_MECHANISMS, upper=True), "PLAIN", "sasl_mechanism"),
    "sasl.jaas.config": Property(_optional_str, None, "sasl_jaas_config"),
    "sasl.username": Property(_optional_str, None, "sasl_username"),
    "sasl.password": Property(_optional_str, None, "sasl_password"),
    # which login: Java class names select the same behaviour here (client/auth/login.py)
    "sasl.login.class": Property(_optional_str, None, "sasl_login_class"),
    "sasl.login.callback.handler.class": Property(_optional_str, None, "sasl_login_callback_handler_class"),
    "sasl.client.callback.handler.class": Property(_optional_str, None, "sasl_client_callback_handler_class"),
    "sasl.kerberos.service.name": Property(_optional_str, None, "sasl_kerberos_service_name"),
    "sasl.kerberos.kinit.cmd": Property(_str, "/usr/bin/kinit", "sasl_kerberos_kinit_cmd"),
    "sasl.kerberos.ticket.renew.window.factor": Property(_float(0.5, 1.0), 0.8,
                                                      "sasl_kerberos_ticket_renew_window_factor"),
    "sasl.kerberos.ticket.renew.jitter": Property(_float(0.0, 0.25), 0.05, "sasl_kerberos_ticket_renew_jitter"),
    "sasl.kerberos.min.time.before.relogin": Property(_int(0, None), 60000, "sasl_kerberos_min_time_before_relogin"),
    # OAUTHBEARER (KIP-255, KIP-768, KIP-1139)
    "sasl.oauthbearer.token.endpoint.url": Property(_optional_str, None, "sasl_oauthbearer_token_endpoint_url"),
    "sasl.oauthbearer.scope.claim.name": Property(_str, "scope", "sasl_oauthbearer_scope_claim_name"),
    "sasl.oauthbearer.sub.claim.name": Property(_str, "sub", "sasl_oauthbearer_sub_claim_name"),
    "sasl.oauthbearer.jwt.retriever.class": Property(_optional_str, None, "sasl_oauthbearer_jwt_retriever_class"),
    "sasl.oauthbearer.jwt.validator.class": Property(_optional_str, None, "sasl_oauthbearer_jwt_validator_class"),
    "sasl.oauthbearer.client.credentials.client.id": Property(_optional_str, None, "sasl_oauthbearer_client_id"),
    "sasl.oauthbearer.client.credentials.client.secret": Property(_optional_str, None,
                                                               "sasl_oauthbearer_client_secret"),
    "sasl.oauthbearer.scope": Property(_optional_str, None, "sasl_oauthbearer_scope"),
    "sasl.oauthbearer.header.urlencode": Property(parse_bool, False, "sasl_oauthbearer_header_urlencode"),
    "sasl.oauthbearer.assertion.algorithm": Property(_str, "RS256", "sasl_oauthbearer_assertion_algorithm"),
    "sasl.oauthbearer.assertion.claim.aud": Property(_optional_str, None, "sasl_oauthbearer_assertion_claim_aud"),
    "sasl.oauthbearer.assertion.claim.iss": Property(_optional_str, None, "sasl_oauthbearer_assertion_claim_iss"),
    "sasl.oauthbearer.assertion.claim.sub": Property(_optional_str, None, "sasl_oauthbearer_assertion_claim_sub"),
    "sasl.oauthbearer.assertion.claim.exp.seconds": Property(_int(0, 86400), 300,
                                                          "sasl_oauthbearer_assertion_claim_exp_seconds"),
    "sasl.oauthbearer.assertion.claim.nbf.seconds": Property(_int(0, 3600), 60,
                                                          "sasl_oauthbearer_assertion_claim_nbf_seconds"),
    "sasl.oauthbearer.assertion.claim.jti.include": Property(parse_bool, False,
                                                          "sasl_oauthbearer_assertion_claim_jti_include"),
    "sasl.oauthbearer.assertion.private.key.file": Property(_optional_str, None,
                                                         "sasl_oauthbearer_assertion_private_key_file"),
    "sasl.oauthbearer.assertion.private.key.passphrase": Property(_optional_str, None,
                                                               "sasl_oauthbearer_assertion_private_key_passphrase"),
    "sasl.oauthbearer.assertion.template.file": Property(_optional_str, None,
                                                      "sasl_oauthbearer_assertion_template_file"),
    "sasl.oauthbearer.assertion.file": Property(_optional_str, None, "sasl_oauthbearer_assertion_file"),
    "sasl.login.connect.timeout.ms": Property(_int(1, _MAX_INT), 10000, "sasl_login_connect_timeout_ms"),
    "sasl.login.read.timeout.ms": Property(_int(1, _MAX_INT), 10000, "sasl_login_read_timeout_ms"),
    "sasl.login.retry.backoff.ms": Property(_int(0, _MAX_INT), 100, "sasl_login_retry_backoff_ms"),
    "sasl.login.retry.backoff.max.ms": Property(_int(0, _MAX_INT), 10000, "sasl_login_retry_backoff_max_ms"),
    "sasl.login.refresh.window.factor": Property(_float(0.5, 1.0), 0.8, "sasl_login_refresh_window_factor"),
    "sasl.login.refresh.window.jitter": Property(_float(0.0, 0.25), 0.05, "sasl_login_refresh_window_jitter"),
    "sasl.login.refresh.min.period.seconds": Property(_int(0, 900), 60, "sasl_login_refresh_min_period_seconds"),
    "sasl.login.refresh.buffer.seconds": Property(_int(0, 3600), 300, "sasl_login_refresh_buffer_seconds"),
    "ssl.truststore.location": Property(_optional_str, None, "ssl_truststore_location"),
    "ssl.truststore.type": Property(_choice(("PEM",), upper=True), "PEM", "ssl_truststore_type"),
    "ssl.truststore.certificates": Property(_optional_str, None, "ssl_truststore_certificates"),
    "ssl.truststore.password": Property(_optional_str, None, "ssl_truststore_password"),
    "ssl.keystore.location": Property(_optional_str, None, "ssl_keystore_location"),
    "ssl.keystore.type": Property(_choice(("PEM",), upper=True), "PEM", "ssl_keystore_type"),
    "ssl.keystore.password": Property(_optional_str, None, "ssl_keystore_password"),
    "ssl.keystore.key": Property(_optional_str, None, "ssl_keystore_key"),
    "ssl.keystore.certificate.chain": Property(_optional_str, None, "ssl_keystore_certificate_chain"),
    "ssl.key.password": Property(_optional_str, None, "ssl_key_password"),
    "ssl.endpoint.identification.algorithm": Property(_choice(("https", "")), "https",
                                                   "ssl_endpoint_identification_algorithm"),
    "ssl.cipher.suites": Property(_optional_str, None, "ssl_cipher_suites"),
    "request.timeout.ms": Property(_int(1, _MAX_INT), 30000, "request_timeout_ms"),
    "socket.connection.setup.timeout.ms": Property(_int(1, _MAX_INT), 10000, "connection_setup_timeout_ms"),
    "socket.connection.setup.timeout.max.ms": Property(_int(1, _MAX_INT), 30000, "connection_setup_timeout_max_ms"),
    "default.api.timeout.ms": Property(_int(1, _MAX_INT), 60000, "default_api_timeout_ms"),
    "receive.buffer.bytes": Property(_int(-1, _MAX_INT), 4 * 1024 * 1024, "receive_buffer_bytes"),
    "send.buffer.bytes": Property(_int(-1, _MAX_INT), 1024 * 1024, "send_buffer_bytes"),
    "fetch.max.bytes": Property(_int(1, _MAX_INT), 52428800, "fetch_max_bytes"),
    "max.partition.fetch.bytes": Property(_int(1, _MAX_INT), 1048576, "max_partition_fetch_bytes"),
    "fetch.min.bytes": Property(_int(0, _MAX_INT), 1, "fetch_min_bytes"),
    "fetch.max.wait.ms": Property(_int(0, _MAX_INT), 500, "fetch_max_wait_ms"),
    "fetch.pipeline.depth": Property(_int(1, 16), 2, "fetch_pipeline_depth"),
    "isolation.level": Property(_choice(ISOLATION_LEVELS), "read_uncommitted", "isolation_level"),
    # as in the Java client: retry until default.api.timeout.ms / delivery.timeout.ms runs out
    "retries": Property(_int(0, _MAX_INT), _MAX_INT, "retries"),
    "retry.backoff.ms": Property(_int(0, _MAX_INT), 100, "retry_backoff_ms"),
    "retry.backoff.max.ms": Property(_int(0, _MAX_INT), 1000, "retry_backoff_max_ms"),
    "reconnect.backoff.ms": Property(_int(0, _MAX_INT), 50, "reconnect_backoff_ms"),
    "reconnect.backoff.max.ms": Property(_int(0, _MAX_INT), 1000, "reconnect_backoff_max_ms"),
    "metadata.max.age.ms": Property(_int(0, _MAX_INT), 300000, "metadata_max_age_ms"),
    # how long a pooled connection may sit idle before it is closed rather than reused (Java consumer default)
    "connections.max.idle.ms": Property(_int(0, _MAX_INT), 540000, "connections_max_idle_ms"),
    "max.in.flight.requests.per.connection": Property(_int(1, 64), 5, "max_in_flight"),
    "allow.auto.create.topics": Property(parse_bool, False, "allow_auto_create_topics"),
    "api.version.request": Property(parse_bool, True, "api_version_request"),
    "broker.version.fallback": Property(_optional_str, None, "broker_version_fallback"),
    "group.id": Property(_optional_str, None, "group_id"),
    "group.instance.id": Property(_optional_str, None, "group_instance_id"),
    "session.timeout.ms": Property(_int(1, _MAX_INT), 45000, "session_timeout_ms"),
    "heartbeat.interval.ms": Property(_int(1, _MAX_INT), 3000, "heartbeat_interval_ms"),
    "max.poll.interval.ms": Property(_int(1, _MAX_INT), 300000, "max_poll_interval_ms"),
    "acks": Property(_acks, -1, "acks"),
    "linger.ms": Property(_int(0, _MAX_INT), 5, "linger_ms"),
    "batch.size": Property(_int(0, _MAX_INT), 16384, "batch_size"),
    "compression.type": Property(_choice(COMPRESSION_TYPES), "none", "compression_type"),
    "enable.idempotence": Property(parse_bool, False, "enable_idempotence"),
    "max.request.size": Property(_int(1, _MAX_INT), 1048576, "max_request_size"),
    "delivery.timeout.ms": Property(_int(1, _MAX_INT), 120000, "delivery_timeout_ms"),
    # send() waits at most max.block.ms for topic metadata and for room in buffer.memory bytes of queued records
    "buffer.memory": Property(_int(1, _MAX_INT), 33554432, "buffer_memory"),
    "max.block.ms": Property(_int(0, _MAX_INT), 60000, "max_block_ms"),
    # a transactional producer (implies enable.idempotence); the broker caps the timeout at transaction.max.timeout.ms
    "transactional.id": Property(_optional_str, None, "transactional_id"),
    "transaction.timeout.ms": Property(_int(1, _MAX_INT), 60000, "transaction_timeout_ms"),
}


def suggestion(key: str) -> str:
    close = difflib.get_close_matches(key, [*PROPERTIES, *IGNORED_KEYS], n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


JAAS_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule": ("OAUTHBEARER",),
    # aws-msk-iam-auth's module (new and old package) for its own AWS_MSK_IAM mechanism
    "software.amazon.msk.auth.iam.IAMLoginModule": ("AWS_MSK_IAM",),
    "com.amazonaws.msk.auth.iam.IAMLoginModule": ("AWS_MSK_IAM",),
    "com.sun.security.auth.module.Krb5LoginModule": ("GSSAPI",),
}


def parse_jaas_config(text: str) -> tuple[str, dict[str, str]]:
    """Split ``<LoginModule> required key="value" ...;`` into (module, options); errors never echo values."""
    match = re.fullmatch(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;?\s*", text, re.S)
    if not match:
        raise ConfigError("sasl.jaas.config must look like '<LoginModule> required username=\"...\" "
                          "password=\"...\";'")
    module, rest = match.group(1), match.group(3)
    options: dict[str, str] = {}
    pos = 0
    pattern = re.compile(r'\s*([\w.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))\s*')
    while pos < len(rest):
        m = pattern.match(rest, pos)
        if not m:
            raise ConfigError(f"sasl.jaas.config: cannot parse the options after {module} (values hidden)")
        value = m.group(2) if m.group(2) is not None else m.group(3)
        options[m.group(1)] = re.sub(r"\\(.)", r"\1", value)
        pos = m.end()
    return module, options
