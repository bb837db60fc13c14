"""ZooKeeper from Kafka 3.9's class path (the ZooKeeper version Kafka 3.9 ships with): one server, or an
ensemble of several on 127.0.0.1, and ZooKeeper's own shell."""

from __future__ import annotations

import socket
import subprocess
import tempfile
from pathlib import Path

from harness.fetch import classpath
from kafka_spark.local.config import write_properties
from kafka_spark.local.process import ServerProcess, free_port, free_ports, java_argv
from kafka_spark.local.tools import ToolError

TEMPLATES = Path(__file__).parent / "templates"
# Kafka 3.9 and its ZooKeeper log through reload4j (log4j 1 syntax)
SERVER_LOGGING = f"-Dlog4j.configuration=file:{TEMPLATES / 'log4j-server.properties'}"
TOOLS_LOGGING = f"-Dlog4j.configuration=file:{TEMPLATES / 'log4j-tools.properties'}"
SERVER_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


def srvr(host: str, port: int, timeout: float = 2.0) -> str:
    """Send the `srvr` four-letter command, which a ZooKeeper answers with its version once it serves; the reply
    text, or OSError while it does not serve."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(b"srvr")
        chunks = []
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            chunks.append(chunk)
    reply = b"".join(chunks).decode(errors="replace")
    if not reply.startswith("Zookeeper version"):
        raise OSError(f"ZooKeeper not serving yet: {reply.strip()[:80]!r}")
    return reply


def zookeeper_shell(connect: str, *commands: str, timeout: float = 120.0) -> str:
    """Run ZooKeeper's own shell (`ZooKeeperMain`) on `connect` with `commands`, one session; its stdout."""
    argv = java_argv(classpath("kafka39"), "org.apache.zookeeper.ZooKeeperMain", ["-server", connect], heap="256m",
                     props=[TOOLS_LOGGING], short_lived=True)
    script = "".join(c + "\n" for c in (*commands, "quit"))
    proc = subprocess.run(argv, input=script, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise ToolError(f"ZooKeeperMain {connect} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


class ZooKeeperServer:
    """ZooKeeper on 127.0.0.1 with a fresh data dir; `connect` is its connection string.

    `quorum` (member id -> (peer port, election port), this server's id `my_id` among them) makes it a
    member of an ensemble; it then serves once a majority is up.
    """

    def __init__(self, data_dir: Path | None = None, my_id: int = 0,
                 quorum: dict[int, tuple[int, int]] | None = None, port: int | None = None) -> None:
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-zk-"))
        self.port = port or free_port()
        self.my_id = my_id
        self.quorum = quorum or {}
        self.process: ServerProcess | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def launch(self) -> ZooKeeperServer:
        """Start the process without waiting for it to serve."""
        props: dict[str, object] = {
            "tickTime": 2000,
            "dataDir": self.data_dir / "zk-data",
            "clientPort": self.port,
            "clientPortAddress": "127.0.0.1",
            "maxClientCnxns": 0,
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "*",
        }
        if self.quorum:
            props.update({"initLimit": 10, "syncLimit": 5})
            props.update({f"server.{i}": f"127.0.0.1:{peer}:{election}"
                          for i, (peer, election) in sorted(self.quorum.items())})
            (self.data_dir / "zk-data").mkdir(parents=True, exist_ok=True)
            (self.data_dir / "zk-data" / "myid").write_text(f"{self.my_id}\n")
        conf = write_properties(self.data_dir / "zookeeper.properties", props)
        argv = java_argv(classpath("kafka39"), SERVER_MAIN, [str(conf)], heap="256m", props=[SERVER_LOGGING])
        self.process = ServerProcess(f"zookeeper-{self.my_id}", argv, self.data_dir / "zookeeper.log").start()
        return self

    def wait_ready(self, timeout: float = 60.0) -> ZooKeeperServer:
        assert self.process is not None
        self.process.wait_ready(lambda: bool(srvr("127.0.0.1", self.port, timeout=1.0)), timeout)
        return self

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        return self.launch().wait_ready(timeout)

    def restart(self, timeout: float = 60.0) -> ZooKeeperServer:
        """Stop and start again on the same port with the same data."""
        self.stop()
        return self.start(timeout)

    def stop(self) -> None:
        if self.process:
            self.process.stop(grace=10)


class ZooKeeperEnsemble:
    """`size` ZooKeeper servers forming one ensemble; `connect` lists them all."""

    def __init__(self, size: int = 3, data_dir: Path | None = None) -> None:
        base = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-zk-ensemble-"))
        ports = free_ports(3 * size)
        quorum = {i + 1: (ports[size + 2 * i], ports[size + 2 * i + 1]) for i in range(size)}
        self.nodes = [ZooKeeperServer(base / f"zk{i}", my_id=i, quorum=quorum, port=ports[i - 1])
                      for i in sorted(quorum)]

    @property
    def connect(self) -> str:
        return ",".join(node.connect for node in self.nodes)

    def start(self, timeout: float = 90.0) -> ZooKeeperEnsemble:
        # All members first: none serves before a majority has elected a leader.
        for node in self.nodes:
            node.launch()
        for node in self.nodes:
            node.wait_ready(timeout)
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
