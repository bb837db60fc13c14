"""Kafka 4.x in KRaft mode: one combined broker+controller node, optionally with SASL and TLS listeners."""

from __future__ import annotations

import base64
import os
import shutil
import ssl
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafka_spark.client.net.probe import answers
from kafka_spark.local.config import template, write_properties
from kafka_spark.local.jars import classpath
from kafka_spark.local.process import ServerProcess, free_ports, java_argv
from kafka_spark.local.tls import TlsMaterial, make_tls
from kafka_spark.local.tools import KafkaTools
from kafka_spark.local.topics import CreatesTopics

KAFKA4_VERSION = "4.1.1"
# Test credentials of the local broker; they guard nothing but a throwaway loopback server.
SASL_USERS = {"alice": "alice-secret"}
_ADMIN = ("admin", "admin-secret")
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SECURE_LISTENERS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL", "MTLS")
# Listener names that differ from their security protocol; MTLS is SSL that requires client certificates.
LISTENER_PROTOCOLS = {"MTLS": "SSL"}


def security_protocol(listener: str) -> str:
    """The security protocol of a listener name (PLAINTEXT, SASL_PLAINTEXT, SSL or SASL_SSL); a name that
    starts with a protocol and an underscore (SASL_PLAINTEXT_OAUTH) has that protocol."""
    for protocol in ("SASL_PLAINTEXT", "SASL_SSL", "PLAINTEXT", "SSL"):
        if listener.startswith(f"{protocol}_"):
            return protocol
    return LISTENER_PROTOCOLS.get(listener, listener)


def random_cluster_id() -> str:
    """A cluster id in the form Kafka's `Uuid.toString()` produces (22 url-safe base64 chars)."""
    while True:
        cid = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def _sasl_properties(listener: str) -> dict[str, object]:
    """JAAS logins of one SASL listener: PLAIN with inline users, SCRAM with users from the metadata log."""
    prefix = f"listener.name.{listener.lower()}"
    users = " ".join(f'user_{u}="{p}"' for u, p in [_ADMIN, *SASL_USERS.items()])
    props: dict[str, object] = {
        "sasl.enabled.mechanisms": "PLAIN," + ",".join(SCRAM_MECHANISMS),
        f"{prefix}.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                            f'username="{_ADMIN[0]}" password="{_ADMIN[1]}" {users};',
    }
    for mech in SCRAM_MECHANISMS:
        props[f"{prefix}.{mech.lower()}.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{_ADMIN[0]}" password="{_ADMIN[1]}";'
        )
    return props


def _tls_properties(listener: str, tls: TlsMaterial, client_auth: bool) -> dict[str, object]:
    """The broker keystore of one TLS listener; with `client_auth`, clients must show a cert from the test CA."""
    prefix = f"listener.name.{listener.lower()}.ssl"
    props: dict[str, object] = {
        f"{prefix}.keystore.type": "PKCS12",
        f"{prefix}.keystore.location": tls.broker_p12,
        f"{prefix}.keystore.password": tls.password,
        f"{prefix}.key.password": tls.password,
        f"{prefix}.client.auth": "required" if client_auth else "none",
    }
    if client_auth:
        props.update({f"{prefix}.truststore.type": "PEM", f"{prefix}.truststore.location": tls.ca_pem})
    return props


@dataclass
class KafkaNode(CreatesTopics):
    """One KRaft node (broker+controller) on 127.0.0.1; `bootstrap` is its PLAINTEXT address."""

    data_dir: Path
    node_id: int = 1
    listeners: dict[str, int] = field(default_factory=dict)
    controller_port: int = 0
    voters: str = ""
    cluster_id: str = ""
    tls: TlsMaterial | None = None
    heap: str = "512m"
    extra: dict[str, object] = field(default_factory=dict)
    # JVM system properties (`-Dname=value`): the OAuth URLs Kafka 4 may reach, the krb5.conf of a Kerberos listener
    jvm_props: list[str] = field(default_factory=list)
    # logger name -> level, beside the INFO root (e.g. DEBUG for the SASL authenticator, to see re-authentications)
    log_levels: dict[str, str] = field(default_factory=dict)
    process: ServerProcess | None = None
    version: str = KAFKA4_VERSION
    startup_seconds: float = 0.0
    temporary: bool = False  # its data directory was made for it: `discard` removes it

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.listeners['PLAINTEXT']}"

    def address(self, listener: str) -> str:
        """`host:port` of a listener: PLAINTEXT, SASL_PLAINTEXT, SSL, SASL_SSL or MTLS (SSL + client certificates)."""
        return f"127.0.0.1:{self.listeners[listener]}"

    @property
    def log_dir(self) -> Path:
        """The broker's log directory (topic-partition folders with segment files)."""
        return self.data_dir / "logs"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "server.log"

    @property
    def ca_pem(self) -> Path | None:
        return self.tls.ca_pem if self.tls else None

    @property
    def tools(self) -> KafkaTools:
        return KafkaTools("kafka4", self.bootstrap)

    def server_properties(self) -> dict[str, object]:
        names = list(self.listeners)
        listeners = [f"{n}://127.0.0.1:{p}" for n, p in self.listeners.items()]
        props: dict[str, object] = {
            "process.roles": "broker,controller",
            "node.id": self.node_id,
            "controller.quorum.voters": self.voters,
            "listeners": ",".join([*listeners, f"CONTROLLER://127.0.0.1:{self.controller_port}"]),
            "advertised.listeners": ",".join(listeners),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(
                ["CONTROLLER:PLAINTEXT", *(f"{n}:{security_protocol(n)}" for n in names)]),
            "log.dirs": self.log_dir,
            "offsets.topic.num.partitions": 1,
            "transaction.state.log.num.partitions": 1,
            "group.initial.rebalance.delay.ms": 0,
            "num.partitions": 1,
            "auto.create.topics.enable": "true",
            "log.segment.bytes": 1048576,
            "num.network.threads": 2,
            "num.io.threads": 2,
            "num.recovery.threads.per.data.dir": 1,
            "delete.topic.enable": "true",
        }
        single = self.voters.count("@") == 1
        if single:
            # An idle controller appends a no-op record to the metadata log every 500 ms (for quorum health
            # metrics, which a lone node has no use for): an idle broker took 2.8% of a core with them, 1.8%
            # without.
            props["metadata.max.idle.interval.ms"] = 0
            for key in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor",
                        "transaction.state.log.min.isr", "share.coordinator.state.topic.replication.factor",
                        "share.coordinator.state.topic.min.isr"):
                props[key] = 1
        for name in names:
            protocol = security_protocol(name)
            if protocol.startswith("SASL"):
                props.update(_sasl_properties(name))
            if protocol.endswith("SSL") and self.tls:
                props.update(_tls_properties(name, self.tls, client_auth=name == "MTLS"))
        props.update(self.extra)
        return props

    def format(self) -> None:
        """Write server.properties and format the metadata log (with the SCRAM users)."""
        props_file = write_properties(self.data_dir / "server.properties", self.server_properties())
        scram = []
        if any(security_protocol(n).startswith("SASL") for n in self.listeners):
            for mech in SCRAM_MECHANISMS:
                for user, pw in SASL_USERS.items():
                    scram += ["--add-scram", f"{mech}=[name={user},password={pw}]"]
        KafkaTools("kafka4", self.bootstrap).run(
            "storage", "format", "-t", self.cluster_id, "-c", str(props_file), *scram, bootstrap=False
        )

    def start(self, format_first: bool = True) -> KafkaNode:
        """Start the JVM (formatting a fresh data dir first); returns without waiting for readiness."""
        if format_first:
            self.format()
        log_conf = self._log_config()
        argv = java_argv(classpath("kafka4"), "kafka.Kafka", [str(self.data_dir / "server.properties")],
                         heap=self.heap, props=[f"-Dlog4j2.configurationFile={log_conf}", *self.jvm_props])
        self.process = ServerProcess(f"kafka-{self.node_id}", argv, self.log_path).start()
        return self

    def _log_config(self) -> Path:
        log_conf = template("log4j2-server.properties", self.data_dir)
        if not self.log_levels:
            return log_conf
        # this node's own copy: the shared template stays as it is for the other nodes
        lines = [log_conf.read_text()]
        for n, (logger, level) in enumerate(sorted(self.log_levels.items())):
            lines.append(f"logger.extra{n}.name = {logger}\nlogger.extra{n}.level = {level}\n")
        own = self.data_dir / "log4j2-node.properties"
        own.write_text("".join(lines))
        return own.resolve()

    def ready(self) -> bool:
        return answers("127.0.0.1", self.listeners["PLAINTEXT"])

    def wait_ready(self, timeout: float = 90.0) -> KafkaNode:
        assert self.process is not None
        self.process.wait_ready(self.ready, timeout)
        return self

    def ssl_context(self, client_certificate: bool = False) -> ssl.SSLContext:
        """A client TLS context that trusts only the test CA (hostname checks on), optionally showing the
        CA-signed client certificate that the MTLS listener requires."""
        assert self.tls is not None, "this node has no TLS listeners"
        context = ssl.create_default_context(cafile=str(self.tls.ca_pem))
        if client_certificate:
            context.load_cert_chain(str(self.tls.client_pem))
        return context

    def stop(self, grace: float = 20.0) -> None:
        if self.process:
            self.process.stop(grace)

    def kill(self) -> None:
        """Crash the node (SIGKILL), as a power cut would."""
        import signal

        if self.process:
            self.process.signal(signal.SIGKILL)
            self.process.stop(grace=1)

    def restart(self, timeout: float = 90.0) -> KafkaNode:
        self.stop()
        self.start(format_first=False)
        return self.wait_ready(timeout)

    def __enter__(self) -> KafkaNode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()

    def discard(self) -> None:
        """Stop the node and remove its data directory if it was made for it (`stop` keeps it for a restart)."""
        self.stop()
        if self.temporary:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def start_kafka(data_dir: Path | None = None, secure: bool = True, heap: str = "512m",
                extra: dict[str, object] | None = None, timeout: float = 90.0,
                listeners: Sequence[str] = (), jvm_props: Sequence[str] = (),
                log_levels: dict[str, str] | None = None) -> KafkaNode:
    """Start a single-node Kafka 4.x; with `secure`, also SASL_PLAINTEXT, SSL, SASL_SSL and MTLS listeners.

    `listeners` adds listeners of other names (SASL_PLAINTEXT_KRB, SASL_PLAINTEXT_OIDC: configured by `extra`; a
    TLS one gets the test CA's broker keystore); `jvm_props` are `-D` system properties of the broker's JVM;
    `log_levels` sets loggers beside the INFO root.
    """
    temporary = data_dir is None
    data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-kafka4-"))
    if data_dir.exists() and any(data_dir.iterdir()):
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    names = [*(SECURE_LISTENERS if secure else ["PLAINTEXT"]), *listeners]
    ports = free_ports(len(names) + 1)
    node = KafkaNode(
        data_dir=data_dir, listeners=dict(zip(names, ports, strict=False)), controller_port=ports[-1],
        cluster_id=random_cluster_id(), heap=heap, extra=dict(extra or {}),
        tls=make_tls(data_dir / "tls") if secure or any(security_protocol(n).endswith("SSL") for n in names) else None,
        jvm_props=list(jvm_props), log_levels=dict(log_levels or {}), temporary=temporary,
    )
    node.voters = f"1@127.0.0.1:{node.controller_port}"
    started = time.monotonic()
    node.start().wait_ready(timeout)
    node.startup_seconds = time.monotonic() - started
    return node
