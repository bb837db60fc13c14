"""Apache Iceberg's REST catalog server on a free port, the tests' REST catalog; its tables' files on the
harness's S3 server (moto) or on local disk.

The server is the one Iceberg's REST test fixtures publish (`org.apache.iceberg.rest.RESTCatalogServer`, the
server of Iceberg's `apache/iceberg-rest-fixture` image, started through the launcher below): Iceberg's
reference REST API (`RESTCatalogServlet` over `RESTCatalogAdapter`) in front of a backing catalog built from
`CATALOG_*` environment variables (the prefix dropped, `__` read as `-`, `_` as `.`, lower-cased:
`CATALOG_IO__IMPL` is `io-impl`, `CATALOG_S3_PATH__STYLE__ACCESS` is `s3.path-style-access`), its port
`rest.port` (`CATALOG_REST_PORT`). The backing catalog here is Iceberg's JDBC catalog on a SQLite file in the
server's folder; with an S3 server, the catalog's FileIO is Iceberg's S3FileIO (iceberg-aws and its AWS SDK
bundle) pointed at it, path-style.

It listens on 127.0.0.1 only. RESTCatalogServer takes no host (Jetty's `Server(port)`, every interface), so
the harness starts a launcher of its own instead (tests/harness/java/.../LoopbackRESTCatalogServer.java): the
same server, put together from the same pieces and properties, but with its one Jetty connector given host
127.0.0.1 before the server opens it. It is compiled with the JDK's `javac` against the server's jars when they
are ensured, and kept beside them as `launcher/<hash of its source>.jar` (a new source, a new jar; the folder goes
with the jars when a changed pom refetches them).

The jars (tests/harness/poms/iceberg_rest.xml) are fetched with Maven into the cache, as the other servers'
(`python -m harness.iceberg_rest` fetches them; the first start does when they are missing, in the test that
needs them rather than in `.ci/setup`: ~145 MB that only one test file uses).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from harness.s3 import S3Server
from kafka_spark.local import jars
from kafka_spark.local.process import ServerProcess, free_port, java_argv

ICEBERG_VERSION = "1.11.0"
MAIN_CLASS = "org.apache.iceberg.rest.LoopbackRESTCatalogServer"
LAUNCHER_SOURCE = Path(__file__).parent / "java" / "org/apache/iceberg/rest/LoopbackRESTCatalogServer.java"
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
POM = Path(__file__).parent / "poms" / "iceberg_rest.xml"
JAR_SET = "iceberg-rest"


def jar_dir() -> Path:
    """The folder of the server's jars in the cache (whether or not it exists yet)."""
    return jars.cache_dir() / "jars" / JAR_SET


def ensure() -> Path:
    """Fetch the server's jars unless the cache holds them, and compile the launcher unless it is there; the jars'
    folder."""
    folder = jars.fetch_pom(jar_dir(), POM.read_text())
    launcher_jar(folder)
    return folder


def launcher_jar(folder: Path) -> Path:
    """The launcher compiled against the jars in `folder`, as `folder/launcher/<hash of its source>.jar`; built
    unless there (in a scratch folder, then moved into place, so that concurrent starts never see half of it)."""
    source = LAUNCHER_SOURCE.read_bytes()
    out = folder / "launcher"
    jar = out / f"{hashlib.sha256(source).hexdigest()[:16]}.jar"
    if jar.is_file():
        return jar
    if shutil.which("javac") is None:
        raise RuntimeError("the JDK's `javac` is not on PATH (the Iceberg REST launcher is compiled with it)")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="build-", dir=out) as tmp:
        classes = Path(tmp) / "classes"
        argv = ["javac", "-encoding", "UTF-8", "--release", "17", "-proc:none", "-implicit:none",
                "-cp", str(folder.resolve() / "*"), "-d", str(classes), str(LAUNCHER_SOURCE)]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"javac failed on {LAUNCHER_SOURCE.name} (exit {proc.returncode}):\n{proc.stderr}")
        partial = Path(tmp) / jar.name
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        os.replace(partial, jar)
    for stale in out.glob("*.jar"):  # other sources' (a running JVM keeps its open jar)
        if stale != jar:
            stale.unlink(missing_ok=True)
    return jar


def classpath() -> str:
    """The server's class path: the launcher's jar, then the jars' folder (its real path, as the other servers')."""
    folder = ensure().resolve()
    return os.pathsep.join([str(launcher_jar(folder)), str(folder / "*")])


def _env_name(prop: str) -> str:
    """The fixture's variable for catalog property `prop` (`s3.path-style-access` -> CATALOG_S3_PATH__STYLE__ACCESS)."""
    return "CATALOG_" + prop.replace("-", "__").replace(".", "_").upper()


class IcebergRestCatalog:
    """One REST catalog server: a JDBC catalog (SQLite) behind Iceberg's REST API, tables under `warehouse`
    (`s3://bucket/path` on `s3`, or a local directory)."""

    def __init__(self, warehouse: str, s3: S3Server | None = None, data_dir: Path | None = None,
                 heap: str = "256m") -> None:
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-iceberg-rest-")).resolve()
        self.warehouse = warehouse
        self.s3 = s3
        self.heap = heap
        self.port = 0
        self.process: ServerProcess | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "iceberg-rest.log"

    def server_properties(self) -> dict[str, str]:
        """The backing catalog's properties, as the server gets them (each as its `CATALOG_*` variable)."""
        props = {
            "catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
            "uri": f"jdbc:sqlite:{self.data_dir / 'catalog.db'}",
            "jdbc.schema-version": "V1",
            "warehouse": self.warehouse,
            "rest.port": str(self.port),
        }
        if self.s3 is not None:
            props.update({
                "io-impl": S3_FILE_IO,
                "s3.endpoint": self.s3.endpoint,
                "s3.path-style-access": "true",
                "s3.access-key-id": self.s3.access_key,
                "s3.secret-access-key": self.s3.secret_key,
                "client.region": self.s3.region,
            })
        return props

    def client_properties(self) -> dict[str, str]:
        """pyiceberg's properties of a client of this catalog (`type`, `uri`; with S3 the `s3.*` its FileIO needs:
        pyiceberg's PyArrow FileIO addresses the bucket by path, as the server's S3FileIO is told to)."""
        props = {"type": "rest", "uri": self.uri}
        if self.s3 is not None:
            props.update({
                "s3.endpoint": self.s3.endpoint,
                "s3.access-key-id": self.s3.access_key,
                "s3.secret-access-key": self.s3.secret_key,
                "s3.region": self.s3.region,
            })
        return props

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CATALOG_")}
        env.update({_env_name(k): v for k, v in self.server_properties().items()})
        if self.s3 is not None:
            env["AWS_REGION"] = self.s3.region  # the SDK's region chain, beside client.region
        return env

    def config(self) -> dict[str, object]:
        """The server's answer to `GET /v1/config`."""
        with urllib.request.urlopen(f"{self.uri}/v1/config", timeout=5) as answer:
            found: dict[str, object] = json.loads(answer.read())
            return found

    def _answers(self) -> bool:
        try:
            self.config()
        except (urllib.error.URLError, OSError, ValueError):
            return False
        return True

    def start(self, timeout: float = 90.0) -> IcebergRestCatalog:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        # the launcher logs no catalog properties (the S3 secret among them)
        props = ["-Dorg.slf4j.simpleLogger.showDateTime=true"]
        argv = java_argv(classpath(), MAIN_CLASS, [], heap=self.heap, props=props, short_lived=True)
        self.process = ServerProcess("iceberg-rest", argv, self.log_path, env=self._env()).start()
        self.process.wait_ready(self._answers, timeout)
        return self

    def stop(self, grace: float = 10.0) -> None:
        if self.process:
            self.process.stop(grace)

    def __enter__(self) -> IcebergRestCatalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_iceberg_rest(warehouse: str, s3: S3Server | None = None, data_dir: Path | None = None,
                       timeout: float = 90.0) -> IcebergRestCatalog:
    """Start a REST catalog server on a free port, its tables under `warehouse` (on `s3` if given)."""
    return IcebergRestCatalog(warehouse, s3, data_dir).start(timeout)


def main() -> None:
    print(f"{JAR_SET}: {ensure()}")


if __name__ == "__main__":
    main()
