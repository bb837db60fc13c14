"""Client configuration under the Java client's property names, validated once, secrets redacted.

`ClientConfig.from_properties({"bootstrap.servers": "host:9092", ...})` checks every name and value
and raises `ConfigError` naming the property and what it accepts. Unknown names are refused (with a
close match suggested) except Java client settings that have no meaning here (deserializers, ...),
which are accepted and ignored so that existing property files work unchanged.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka_spark.errors import ConfigError
from kafka_spark.zookeeper import settings as zk_settings
from kafka_spark.zookeeper.settings import ZooKeeperSettings

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
_SECRET_OPTION_PARTS = ("password", "secret", "token", "passphrase", "accesskey", "keystore.key")

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
class _Prop:
    parse: Callable[[str, Any], Any]
    default: Any
    attr: str


_MAX_INT = 2**31 - 1

_PROPS: dict[str, _Prop] = {
    "bootstrap.servers": _Prop(_servers, None, "bootstrap_servers"),
    "client.id": _Prop(_str, "kafka-spark", "client_id"),
    "security.protocol": _Prop(_choice(SECURITY_PROTOCOLS, upper=True), "PLAINTEXT", "security_protocol"),
    "sasl.mechanism": _Prop(_choice(SASL_MECHANISMS, upper=True), "PLAIN", "sasl_mechanism"),
    "sasl.jaas.config": _Prop(_optional_str, None, "sasl_jaas_config"),
    "sasl.username": _Prop(_optional_str, None, "sasl_username"),
    "sasl.password": _Prop(_optional_str, None, "sasl_password"),
    # which login: Java class names select the same behaviour here (client/auth/login.py)
    "sasl.login.class": _Prop(_optional_str, None, "sasl_login_class"),
    "sasl.login.callback.handler.class": _Prop(_optional_str, None, "sasl_login_callback_handler_class"),
    "sasl.client.callback.handler.class": _Prop(_optional_str, None, "sasl_client_callback_handler_class"),
    "sasl.kerberos.service.name": _Prop(_optional_str, None, "sasl_kerberos_service_name"),
    "sasl.kerberos.kinit.cmd": _Prop(_str, "/usr/bin/kinit", "sasl_kerberos_kinit_cmd"),
    "sasl.kerberos.ticket.renew.window.factor": _Prop(_float(0.5, 1.0), 0.8,
                                                      "sasl_kerberos_ticket_renew_window_factor"),
    "sasl.kerberos.ticket.renew.jitter": _Prop(_float(0.0, 0.25), 0.05, "sasl_kerberos_ticket_renew_jitter"),
    "sasl.kerberos.min.time.before.relogin": _Prop(_int(0, None), 60000, "sasl_kerberos_min_time_before_relogin"),
    # OAUTHBEARER (KIP-255, KIP-768, KIP-1139)
    "sasl.oauthbearer.token.endpoint.url": _Prop(_optional_str, None, "sasl_oauthbearer_token_endpoint_url"),
    "sasl.oauthbearer.scope.claim.name": _Prop(_str, "scope", "sasl_oauthbearer_scope_claim_name"),
    "sasl.oauthbearer.sub.claim.name": _Prop(_str, "sub", "sasl_oauthbearer_sub_claim_name"),
    "sasl.oauthbearer.jwt.retriever.class": _Prop(_optional_str, None, "sasl_oauthbearer_jwt_retriever_class"),
    "sasl.oauthbearer.jwt.validator.class": _Prop(_optional_str, None, "sasl_oauthbearer_jwt_validator_class"),
    "sasl.oauthbearer.client.credentials.client.id": _Prop(_optional_str, None, "sasl_oauthbearer_client_id"),
    "sasl.oauthbearer.client.credentials.client.secret": _Prop(_optional_str, None,
                                                               "sasl_oauthbearer_client_secret"),
    "sasl.oauthbearer.scope": _Prop(_optional_str, None, "sasl_oauthbearer_scope"),
    "sasl.oauthbearer.header.urlencode": _Prop(parse_bool, False, "sasl_oauthbearer_header_urlencode"),
    "sasl.oauthbearer.assertion.algorithm": _Prop(_str, "RS256", "sasl_oauthbearer_assertion_algorithm"),
    "sasl.oauthbearer.assertion.claim.aud": _Prop(_optional_str, None, "sasl_oauthbearer_assertion_claim_aud"),
    "sasl.oauthbearer.assertion.claim.iss": _Prop(_optional_str, None, "sasl_oauthbearer_assertion_claim_iss"),
    "sasl.oauthbearer.assertion.claim.sub": _Prop(_optional_str, None, "sasl_oauthbearer_assertion_claim_sub"),
    "sasl.oauthbearer.assertion.claim.exp.seconds": _Prop(_int(0, 86400), 300,
                                                          "sasl_oauthbearer_assertion_claim_exp_seconds"),
    "sasl.oauthbearer.assertion.claim.nbf.seconds": _Prop(_int(0, 3600), 60,
                                                          "sasl_oauthbearer_assertion_claim_nbf_seconds"),
    "sasl.oauthbearer.assertion.claim.jti.include": _Prop(parse_bool, False,
                                                          "sasl_oauthbearer_assertion_claim_jti_include"),
    "sasl.oauthbearer.assertion.private.key.file": _Prop(_optional_str, None,
                                                         "sasl_oauthbearer_assertion_private_key_file"),
    "sasl.oauthbearer.assertion.private.key.passphrase": _Prop(_optional_str, None,
                                                               "sasl_oauthbearer_assertion_private_key_passphrase"),
    "sasl.oauthbearer.assertion.template.file": _Prop(_optional_str, None,
                                                      "sasl_oauthbearer_assertion_template_file"),
    "sasl.oauthbearer.assertion.file": _Prop(_optional_str, None, "sasl_oauthbearer_assertion_file"),
    "sasl.login.connect.timeout.ms": _Prop(_int(1, _MAX_INT), 10000, "sasl_login_connect_timeout_ms"),
    "sasl.login.read.timeout.ms": _Prop(_int(1, _MAX_INT), 10000, "sasl_login_read_timeout_ms"),
    "sasl.login.retry.backoff.ms": _Prop(_int(0, _MAX_INT), 100, "sasl_login_retry_backoff_ms"),
    "sasl.login.retry.backoff.max.ms": _Prop(_int(0, _MAX_INT), 10000, "sasl_login_retry_backoff_max_ms"),
    "sasl.login.refresh.window.factor": _Prop(_float(0.5, 1.0), 0.8, "sasl_login_refresh_window_factor"),
    "sasl.login.refresh.window.jitter": _Prop(_float(0.0, 0.25), 0.05, "sasl_login_refresh_window_jitter"),
    "sasl.login.refresh.min.period.seconds": _Prop(_int(0, 900), 60, "sasl_login_refresh_min_period_seconds"),
    "sasl.login.refresh.buffer.seconds": _Prop(_int(0, 3600), 300, "sasl_login_refresh_buffer_seconds"),
    "ssl.truststore.location": _Prop(_optional_str, None, "ssl_truststore_location"),
    "ssl.truststore.type": _Prop(_choice(("PEM",), upper=True), "PEM", "ssl_truststore_type"),
    "ssl.truststore.certificates": _Prop(_optional_str, None, "ssl_truststore_certificates"),
    "ssl.truststore.password": _Prop(_optional_str, None, "ssl_truststore_password"),
    "ssl.keystore.location": _Prop(_optional_str, None, "ssl_keystore_location"),
    "ssl.keystore.type": _Prop(_choice(("PEM",), upper=True), "PEM", "ssl_keystore_type"),
    "ssl.keystore.password": _Prop(_optional_str, None, "ssl_keystore_password"),
    "ssl.keystore.key": _Prop(_optional_str, None, "ssl_keystore_key"),
    "ssl.keystore.certificate.chain": _Prop(_optional_str, None, "ssl_keystore_certificate_chain"),
    "ssl.key.password": _Prop(_optional_str, None, "ssl_key_password"),
    "ssl.endpoint.identification.algorithm": _Prop(_choice(("https", "")), "https",
                                                   "ssl_endpoint_identification_algorithm"),
    "ssl.cipher.suites": _Prop(_optional_str, None, "ssl_cipher_suites"),
    "request.timeout.ms": _Prop(_int(1, _MAX_INT), 30000, "request_timeout_ms"),
    "socket.connection.setup.timeout.ms": _Prop(_int(1, _MAX_INT), 10000, "connection_setup_timeout_ms"),
    "socket.connection.setup.timeout.max.ms": _Prop(_int(1, _MAX_INT), 30000, "connection_setup_timeout_max_ms"),
    "default.api.timeout.ms": _Prop(_int(1, _MAX_INT), 60000, "default_api_timeout_ms"),
    "receive.buffer.bytes": _Prop(_int(-1, _MAX_INT), 4 * 1024 * 1024, "receive_buffer_bytes"),
    "send.buffer.bytes": _Prop(_int(-1, _MAX_INT), 1024 * 1024, "send_buffer_bytes"),
    "fetch.max.bytes": _Prop(_int(1, _MAX_INT), 52428800, "fetch_max_bytes"),
    "max.partition.fetch.bytes": _Prop(_int(1, _MAX_INT), 1048576, "max_partition_fetch_bytes"),
    "fetch.min.bytes": _Prop(_int(0, _MAX_INT), 1, "fetch_min_bytes"),
    "fetch.max.wait.ms": _Prop(_int(0, _MAX_INT), 500, "fetch_max_wait_ms"),
    "fetch.pipeline.depth": _Prop(_int(1, 16), 2, "fetch_pipeline_depth"),
    "isolation.level": _Prop(_choice(ISOLATION_LEVELS), "read_uncommitted", "isolation_level"),
    # as in the Java client: retry until default.api.timeout.ms / delivery.timeout.ms runs out
    "retries": _Prop(_int(0, _MAX_INT), _MAX_INT, "retries"),
    "retry.backoff.ms": _Prop(_int(0, _MAX_INT), 100, "retry_backoff_ms"),
    "retry.backoff.max.ms": _Prop(_int(0, _MAX_INT), 1000, "retry_backoff_max_ms"),
    "reconnect.backoff.ms": _Prop(_int(0, _MAX_INT), 50, "reconnect_backoff_ms"),
    "reconnect.backoff.max.ms": _Prop(_int(0, _MAX_INT), 1000, "reconnect_backoff_max_ms"),
    "metadata.max.age.ms": _Prop(_int(0, _MAX_INT), 300000, "metadata_max_age_ms"),
    # how long a pooled connection may sit idle before it is closed rather than reused (Java consumer default)
    "connections.max.idle.ms": _Prop(_int(0, _MAX_INT), 540000, "connections_max_idle_ms"),
    "max.in.flight.requests.per.connection": _Prop(_int(1, 64), 5, "max_in_flight"),
    "allow.auto.create.topics": _Prop(parse_bool, False, "allow_auto_create_topics"),
    "api.version.request": _Prop(parse_bool, True, "api_version_request"),
    "broker.version.fallback": _Prop(_optional_str, None, "broker_version_fallback"),
    "group.id": _Prop(_optional_str, None, "group_id"),
    "group.instance.id": _Prop(_optional_str, None, "group_instance_id"),
    "session.timeout.ms": _Prop(_int(1, _MAX_INT), 45000, "session_timeout_ms"),
    "heartbeat.interval.ms": _Prop(_int(1, _MAX_INT), 3000, "heartbeat_interval_ms"),
    "max.poll.interval.ms": _Prop(_int(1, _MAX_INT), 300000, "max_poll_interval_ms"),
    "acks": _Prop(_acks, -1, "acks"),
    "linger.ms": _Prop(_int(0, _MAX_INT), 5, "linger_ms"),
    "batch.size": _Prop(_int(0, _MAX_INT), 16384, "batch_size"),
    "compression.type": _Prop(_choice(COMPRESSION_TYPES), "none", "compression_type"),
    "enable.idempotence": _Prop(parse_bool, False, "enable_idempotence"),
    "max.request.size": _Prop(_int(1, _MAX_INT), 1048576, "max_request_size"),
    "delivery.timeout.ms": _Prop(_int(1, _MAX_INT), 120000, "delivery_timeout_ms"),
    # send() waits at most max.block.ms for topic metadata and for room in buffer.memory bytes of queued records
    "buffer.memory": _Prop(_int(1, _MAX_INT), 33554432, "buffer_memory"),
    "max.block.ms": _Prop(_int(0, _MAX_INT), 60000, "max_block_ms"),
    # a transactional producer (implies enable.idempotence); the broker caps the timeout at transaction.max.timeout.ms
    "transactional.id": _Prop(_optional_str, None, "transactional_id"),
    "transaction.timeout.ms": _Prop(_int(1, _MAX_INT), 60000, "transaction_timeout_ms"),
}


def _suggest(key: str) -> str:
    close = difflib.get_close_matches(key, [*_PROPS, *IGNORED_KEYS], n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


_JAAS_MODULES = {
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


class ClientConfig:
    """Validated client settings; attributes use snake_case (``request_timeout_ms``, ...)."""

    bootstrap_servers: tuple[tuple[str, int], ...]
    client_id: str
    security_protocol: str
    sasl_mechanism: str
    sasl_jaas_config: str | None
    sasl_username: str | None
    sasl_password: str | None
    sasl_login_class: str | None
    sasl_login_callback_handler_class: str | None
    sasl_client_callback_handler_class: str | None
    sasl_kerberos_service_name: str | None
    sasl_kerberos_kinit_cmd: str
    sasl_kerberos_ticket_renew_window_factor: float
    sasl_kerberos_ticket_renew_jitter: float
    sasl_kerberos_min_time_before_relogin: int
    sasl_oauthbearer_token_endpoint_url: str | None
    sasl_oauthbearer_scope_claim_name: str
    sasl_oauthbearer_sub_claim_name: str
    sasl_oauthbearer_jwt_retriever_class: str | None
    sasl_oauthbearer_jwt_validator_class: str | None
    sasl_oauthbearer_client_id: str | None
    sasl_oauthbearer_client_secret: str | None
    sasl_oauthbearer_scope: str | None
    sasl_oauthbearer_header_urlencode: bool
    sasl_oauthbearer_assertion_algorithm: str
    sasl_oauthbearer_assertion_claim_aud: str | None
    sasl_oauthbearer_assertion_claim_iss: str | None
    sasl_oauthbearer_assertion_claim_sub: str | None
    sasl_oauthbearer_assertion_claim_exp_seconds: int
    sasl_oauthbearer_assertion_claim_nbf_seconds: int
    sasl_oauthbearer_assertion_claim_jti_include: bool
    sasl_oauthbearer_assertion_private_key_file: str | None
    sasl_oauthbearer_assertion_private_key_passphrase: str | None
    sasl_oauthbearer_assertion_template_file: str | None
    sasl_oauthbearer_assertion_file: str | None
    sasl_login_connect_timeout_ms: int
    sasl_login_read_timeout_ms: int
    sasl_login_retry_backoff_ms: int
    sasl_login_retry_backoff_max_ms: int
    sasl_login_refresh_window_factor: float
    sasl_login_refresh_window_jitter: float
    sasl_login_refresh_min_period_seconds: int
    sasl_login_refresh_buffer_seconds: int
    ssl_truststore_location: str | None
    ssl_truststore_certificates: str | None
    ssl_keystore_location: str | None
    ssl_keystore_password: str | None
    ssl_keystore_key: str | None
    ssl_keystore_certificate_chain: str | None
    ssl_key_password: str | None
    ssl_endpoint_identification_algorithm: str
    ssl_cipher_suites: str | None
    request_timeout_ms: int
    connection_setup_timeout_ms: int
    default_api_timeout_ms: int
    receive_buffer_bytes: int
    send_buffer_bytes: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    fetch_min_bytes: int
    fetch_max_wait_ms: int
    fetch_pipeline_depth: int
    isolation_level: str
    retries: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    reconnect_backoff_ms: int
    reconnect_backoff_max_ms: int
    metadata_max_age_ms: int
    connections_max_idle_ms: int
    max_in_flight: int
    allow_auto_create_topics: bool
    api_version_request: bool
    broker_version_fallback: str | None
    group_id: str | None
    group_instance_id: str | None
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    acks: int
    linger_ms: int
    batch_size: int
    compression_type: str
    enable_idempotence: bool
    max_request_size: int
    delivery_timeout_ms: int
    buffer_memory: int
    max_block_ms: int
    transactional_id: str | None
    transaction_timeout_ms: int
    zookeeper: ZooKeeperSettings | None

    def __init__(self, properties: Mapping[str, Any] | None = None, **overrides: Any) -> None:
        props = dict(properties or {})
        # keyword overrides use snake_case attribute names: ClientConfig(bootstrap_servers="h:1")
        by_attr = {p.attr: k for k, p in _PROPS.items()}
        for attr, value in overrides.items():
            if attr not in by_attr:
                raise ConfigError(f"unknown client setting {attr!r}")
            props[by_attr[attr]] = value
        self._given: dict[str, Any] = {}
        for key, value in props.items():
            if not isinstance(key, str):
                raise ConfigError(f"property names are strings, got {key!r}")
            name = key.strip()
            if name in IGNORED_KEYS:
                continue
            if name not in _PROPS and not name.startswith("zookeeper."):
                raise ConfigError(f"unknown client property {name!r}{_suggest(name)}")
            self._given[name] = value
        # zookeeper.*: where to discover the brokers when bootstrap.servers is not given or not reachable.
        object.__setattr__(self, "zookeeper", ZooKeeperSettings.from_properties(self._given))
        for key, prop in _PROPS.items():
            value = self._given.get(key, prop.default)
            if value is None:
                object.__setattr__(self, prop.attr, None)
                continue
            object.__setattr__(self, prop.attr, prop.parse(key, value))
        if self.bootstrap_servers is None:
            if self.zookeeper is None:
                raise ConfigError("bootstrap.servers is required (a comma-separated list of host:port), "
                                  "or zookeeper.connect to discover the brokers")
            object.__setattr__(self, "bootstrap_servers", ())
        self._check_combinations()

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> ClientConfig:
        """Validate Java-style properties."""
        return cls(properties)

    def _check_combinations(self) -> None:
        if self.retry_backoff_max_ms < self.retry_backoff_ms:
            object.__setattr__(self, "retry_backoff_max_ms", self.retry_backoff_ms)
        if self.transactional_id is not None:
            if "enable.idempotence" in self._given and not self.enable_idempotence:
                raise ConfigError("transactional.id needs enable.idempotence=true (a transactional producer is "
                                  "idempotent)")
            if not self.transactional_id.strip():
                raise ConfigError("transactional.id must not be empty")
            object.__setattr__(self, "enable_idempotence", True)
        if self.enable_idempotence and self.acks != -1:
            raise ConfigError("enable.idempotence=true requires acks=all")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError("heartbeat.interval.ms must be lower than session.timeout.ms")
        if self.broker_version_fallback is None and not self.api_version_request:
            raise ConfigError("api.version.request=false needs broker.version.fallback (e.g. 0.9.0)")

    @property
    def uses_sasl(self) -> bool:
        """True for SASL_PLAINTEXT and SASL_SSL."""
        return self.security_protocol.startswith("SASL")

    @property
    def uses_tls(self) -> bool:
        """True for SSL and SASL_SSL."""
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def read_committed(self) -> bool:
        """True when isolation.level is read_committed."""
        return self.isolation_level == "read_committed"

    def jaas_options(self) -> dict[str, str]:
        """The options of `sasl.jaas.config` ({} when unset), after checking its login module serves
        `sasl.mechanism`."""
        if not self.sasl_jaas_config:
            return {}
        module, options = parse_jaas_config(self.sasl_jaas_config)
        mechanisms = _JAAS_MODULES.get(module)
        if mechanisms is None:
            raise ConfigError(f"sasl.jaas.config: login module {module} is not supported; use one of "
                              f"{', '.join(_JAAS_MODULES)}")
        if self.sasl_mechanism not in mechanisms:
            raise ConfigError(f"sasl.jaas.config uses {module.rsplit('.', 1)[-1]}, which does not serve "
                              f"sasl.mechanism={self.sasl_mechanism}")
        return options

    def sasl_credentials(self) -> tuple[str, str]:
        """(username, password) for PLAIN and SCRAM, from sasl.username/sasl.password or the JAAS config."""
        if self.sasl_jaas_config:
            options = self.jaas_options()
            if "username" not in options or "password" not in options:
                raise ConfigError("sasl.jaas.config must set username and password")
            return options["username"], options["password"]
        if self.sasl_username is None or self.sasl_password is None:
            raise ConfigError(f"security.protocol={self.security_protocol} needs sasl.jaas.config or "
                              "sasl.username and sasl.password")
        return self.sasl_username, self.sasl_password

    def get(self, key: str) -> Any:
        """A value by its Java property name."""
        if key not in _PROPS:
            raise ConfigError(f"unknown client property {key!r}{_suggest(key)}")
        return getattr(self, _PROPS[key].attr)

    def with_overrides(self, properties: Mapping[str, Any]) -> ClientConfig:
        """A copy with some properties replaced."""
        return ClientConfig({**self._given, **properties})

    def properties(self, redact: bool = True) -> dict[str, Any]:
        """The properties given explicitly (secrets replaced by a marker unless `redact` is False)."""
        return {k: (REDACTED if redact and k in SECRET_KEYS and v is not None else v) for k, v in self._given.items()}

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "_given":
            object.__setattr__(self, name, value)
            return
        raise AttributeError("ClientConfig is immutable; use with_overrides()")

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(self.properties().items()))
        return f"ClientConfig({shown})"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (ClientConfig, (self._given,))

    def redact(self, text: str) -> str:
        """`text` with every secret value of this configuration replaced by a marker."""
        return redact_text(text, self.secret_values())

    def secret_values(self) -> list[str]:
        """Every secret string this configuration holds (for scrubbing messages)."""
        values = [v for k, v in self._given.items() if k in SECRET_KEYS and isinstance(v, str) and v]
        if self.sasl_jaas_config:
            try:
                _, options = parse_jaas_config(self.sasl_jaas_config)
                values += [v for k, v in options.items()
                           if v and any(part in k.lower() for part in _SECRET_OPTION_PARTS)]
            except ConfigError:
                pass
        return values


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """Replace every occurrence of the given secrets (longest first) with a marker."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def load_properties(path: str) -> dict[str, str]:
    """Read a Java ``.properties`` file (``key=value`` or ``key: value``, ``#``/``!`` comments, ``\\`` joins)."""
    props: dict[str, str] = {}
    with open(path, encoding="utf-8") as fh:
        pending = ""
        for raw in fh:
            line = raw.rstrip("\n").rstrip("\r")
            if not pending and line.lstrip().startswith(("#", "!")):
                continue
            if line.endswith("\\") and not line.endswith("\\\\"):
                pending += line[:-1].lstrip() if pending else line[:-1]
                continue
            line = (pending + line.lstrip()) if pending else line
            pending = ""
            if not line.strip():
                continue
            match = re.match(r"\s*((?:[^=:\s\\]|\\.)+)\s*[=:\s]\s*(.*)$", line)
            if not match:
                props[line.strip()] = ""
                continue
            props[match.group(1).replace("\\", "")] = match.group(2).strip()
    return props


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """``["key=value", ...]`` (command-line ``-X``) into a dict."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected key=value, got {item!r}")
        out[key.strip()] = value
    return out
