"""Apache Hive's standalone metastore on 127.0.0.1 and a free port, the tests' Hive catalog: the thrift server of
Hive 4.0.0 (`org.apache.hadoop.hive.metastore.HiveMetaStore`) over an embedded Derby database, its tables' files
under a local warehouse directory.

Hive 4.0.0 rather than 4.0.1: 4.0.1 removed the thrift call `get_table`, with which pyiceberg's HiveCatalog (0.12)
loads every table, so every load from 4.0.1 fails with `Invalid method name: 'get_table'`
(apache/iceberg-python#1222; pyiceberg's fix is not in a release yet).

The database holds Hive's whole schema, made by Hive's schema tool from the release's Derby script: the transaction
tables among it (HIVE_LOCKS, NEXT_LOCK_ID, ...) serve the table lock pyiceberg takes around every commit, which
DataNucleus's `autoCreateAll` would not create. The script is in the release's bin archive only (no jar carries
it), fetched with the jars; the first `ensure` builds an empty database from it once, kept beside the jars as
`derby/<hash of the schema settings>/metastore_db`, and deletes the archive. Each server starts on a copy of it.

The server binds its thrift port on the address `metastore.thrift.bind.host` names (127.0.0.1), its only listening
socket (the Hive test checks with `ss`). The housekeeping tasks whose classes are Hive's query engine's (not on
this class path) are left out, else the server does not start. The warehouse is local: the metastore creates the
databases' and tables' directories itself, through Hadoop's file systems, and this class path has no S3 one.

The jars (tests/harness/poms/hive_metastore.xml) are fetched with Maven into the cache as the other servers'
(`python -m harness.hive_metastore` fetches them; the first start does when they are missing).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

from kafka_spark.local import jars
from kafka_spark.local.process import ServerProcess, free_port, java_argv

HIVE_VERSION = "4.0.0"
MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
SCHEMA_TOOL = "org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool"
POM = Path(__file__).parent / "poms" / "hive_metastore.xml"
JAR_SET = "hive-metastore"
BIN_ARCHIVE = f"hive-standalone-metastore-server-{HIVE_VERSION}-bin.tar.gz"
DERBY_SCRIPTS = "scripts/metastore/upgrade/derby"
DRIVER = "org.apache.derby.jdbc.EmbeddedDriver"
# The default task list names Hive's query engine's cleaners (not on this class path): the server would not start.
TASK_THREADS = "org.apache.hadoop.hive.metastore.events.EventCleanerTask"
LOG_CONFIG = """\
status = WARN
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = console
"""


def jar_dir() -> Path:
    """The folder of the server's jars in the cache (whether or not it exists yet)."""
    return jars.cache_dir() / "jars" / JAR_SET


def ensure() -> Path:
    """Fetch the server's jars unless the cache holds them, and build the empty database unless it is there; the
    jars' folder."""
    folder = jars.fetch_pom(jar_dir(), POM.read_text())
    if not (folder / BIN_ARCHIVE).is_file() and not empty_database(folder).is_dir():
        shutil.rmtree(folder, ignore_errors=True)  # the archive went without a database built from it: fetch again
        folder = jars.fetch_pom(jar_dir(), POM.read_text())
    build_empty_database(folder)
    return folder


def empty_database(folder: Path) -> Path:
    """Where the empty database built from the jars in `folder` is kept (a new schema setting, a new folder)."""
    stamp = hashlib.sha256(f"{HIVE_VERSION} {DRIVER}".encode()).hexdigest()[:16]
    return folder / "derby" / stamp / "metastore_db"


def site_xml(props: dict[str, str]) -> str:
    """A Hadoop configuration file of `props`."""
    lines = [f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>" for k, v in props.items()]
    return "<?xml version=\"1.0\"?>\n<configuration>\n" + "\n".join(lines) + "\n</configuration>\n"


def _conf_dir(root: Path, props: dict[str, str]) -> Path:
    """A folder of the server's configuration files in `root` (first on the class path, where Hive looks)."""
    conf = root / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "metastore-site.xml").write_text(site_xml(props))
    (conf / "metastore-log4j2.properties").write_text(LOG_CONFIG)
    return conf


def _derby_props(root: Path) -> list[str]:
    # Derby writes its own log to derby.log in the working directory unless told where
    return [f"-Dderby.stream.error.file={root / 'derby.log'}"]


def build_empty_database(folder: Path) -> Path:
    """Build the empty database with Hive's schema tool unless it is kept; its folder. Built in a scratch folder
    and moved into place, so concurrent starts never see half of it; the bin archive is deleted after."""
    target = empty_database(folder)
    archive = folder / BIN_ARCHIVE
    if target.is_dir():
        archive.unlink(missing_ok=True)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="build-", dir=target.parent) as tmp:
        root = Path(tmp)
        home = root / "home"
        with tarfile.open(archive) as tar:
            scripts = [m for m in tar.getmembers() if m.isfile() and f"/{DERBY_SCRIPTS}/" in m.name]
            for member in scripts:
                member.name = f"{DERBY_SCRIPTS}/{Path(member.name).name}"
            tar.extractall(home, members=scripts, filter="data")
        db = root / "metastore_db"
        conf = _conf_dir(root, {"javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={db};create=true",
                                "javax.jdo.option.ConnectionDriverName": DRIVER})
        classpath = os.pathsep.join([str(conf), str(folder.resolve() / "*")])
        argv = java_argv(classpath, SCHEMA_TOOL, ["-dbType", "derby", "-initSchema"], heap="256m",
                         props=_derby_props(root), short_lived=True)
        # the tool finds the scripts under $METASTORE_HOME/scripts/metastore/upgrade/<db type>
        env = {**os.environ, "METASTORE_HOME": str(home)}
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0 or not db.is_dir():
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-20:])
            raise RuntimeError(f"Hive's schema tool failed (exit {proc.returncode}):\n{tail}")
        try:
            os.rename(db, target)
        except OSError:
            if not target.is_dir():  # else another start built it first
                raise
    archive.unlink(missing_ok=True)
    return target


class HiveMetastore:
    """One metastore: Derby in `data_dir`, tables under `warehouse` (a local directory)."""

    def __init__(self, data_dir: Path | None = None, warehouse: Path | None = None, heap: str = "384m") -> None:
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-hive-")).resolve()
        self.warehouse = Path(warehouse or self.data_dir / "warehouse").resolve()
        self.heap = heap
        self.port = 0
        self.process: ServerProcess | None = None

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "hive-metastore.log"

    def server_properties(self) -> dict[str, str]:
        """The server's settings (its metastore-site.xml)."""
        return {
            "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={self.data_dir / 'metastore_db'}",
            "javax.jdo.option.ConnectionDriverName": DRIVER,
            "metastore.warehouse.dir": self.warehouse.as_uri(),
            "metastore.thrift.bind.host": "127.0.0.1",
            "metastore.thrift.port": str(self.port),
            "metastore.task.threads.always": TASK_THREADS,
            # asynchronous loggers need the LMAX disruptor, which Hive's pom does not bring
            "metastore.async.log.enabled": "false",
        }

    def client_properties(self) -> dict[str, str]:
        """pyiceberg's properties of a client of this metastore."""
        return {"type": "hive", "uri": self.uri, "warehouse": self.warehouse.as_uri()}

    def _answers(self) -> bool:
        # the thrift port opens once the store is initialised, as the last step of the start
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True

    def start(self, timeout: float = 120.0) -> HiveMetastore:
        folder = ensure().resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.warehouse.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.data_dir / "metastore_db", ignore_errors=True)
        shutil.copytree(empty_database(folder), self.data_dir / "metastore_db")
        self.port = free_port()
        conf = _conf_dir(self.data_dir, self.server_properties())
        classpath = os.pathsep.join([str(conf), str(folder / "*")])
        argv = java_argv(classpath, MAIN_CLASS, [], heap=self.heap, props=_derby_props(self.data_dir),
                         short_lived=True)
        self.process = ServerProcess("hive-metastore", argv, self.log_path).start()
        self.process.wait_ready(self._answers, timeout)
        return self

    def stop(self, grace: float = 10.0) -> None:
        if self.process:
            self.process.stop(grace)

    def __enter__(self) -> HiveMetastore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_hive_metastore(data_dir: Path | None = None, timeout: float = 120.0) -> HiveMetastore:
    """Start a metastore on a free port of 127.0.0.1 with an empty Derby database, its warehouse in `data_dir`."""
    return HiveMetastore(data_dir).start(timeout)


def main() -> None:
    print(f"{JAR_SET}: {ensure()}")


if __name__ == "__main__":
    main()
