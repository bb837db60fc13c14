"""Client configuration under the Java client's property names, validated once, secrets redacted.

`ClientConfig.from_properties({"bootstrap.servers": "host:9092", ...})` checks every name and value
and raises `ConfigError` naming the property and what it accepts (the properties: properties.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from kafka_spark.client.properties import (
    IGNORED_KEYS,
    JAAS_MODULES,
    PROPERTIES,
    REDACTED,
    SECRET_KEYS,
    SECRET_OPTION_PARTS,
    parse_jaas_config,
    suggestion,
)
from kafka_spark.errors import ConfigError
from kafka_spark.zookeeper.settings import ZooKeeperSettings


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
        by_attr = {p.attr: k for k, p in PROPERTIES.items()}
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
            if name not in PROPERTIES and not name.startswith("zookeeper."):
                raise ConfigError(f"unknown client property {name!r}{suggestion(name)}")
            self._given[name] = value
        # zookeeper.*: where to discover the brokers when bootstrap.servers is not given or not reachable.
        object.__setattr__(self, "zookeeper", ZooKeeperSettings.from_properties(self._given))
        for key, prop in PROPERTIES.items():
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
        mechanisms = JAAS_MODULES.get(module)
        if mechanisms is None:
            raise ConfigError(f"sasl.jaas.config: login module {module} is not supported; use one of "
                              f"{', '.join(JAAS_MODULES)}")
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
        if key not in PROPERTIES:
            raise ConfigError(f"unknown client property {key!r}{suggestion(key)}")
        return getattr(self, PROPERTIES[key].attr)

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
                           if v and any(part in k.lower() for part in SECRET_OPTION_PARTS)]
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
