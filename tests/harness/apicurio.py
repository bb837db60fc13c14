"""Apicurio Registry on 127.0.0.1 and a free port, with in-memory storage: the schema registry of the tests where
Debezium writes Avro itself, through Apicurio's Kafka Connect converter.

Apicurio publishes its server as a Quarkus application library (`apicurio-registry-app`), not as a runnable jar.
The server is built from it as Apicurio's own build does, by Quarkus's Maven plugin (tests/harness/poms/
apicurio_registry.xml, which says which release and why), into `quarkus-app/` in the jar cache: the first start
builds it (~130 MB, a minute or more; `python -m harness.apicurio` builds it ahead), a changed pom rebuilds it.
Storage is the app's default, H2 in memory, so each server starts empty.

Clients: the converter uses Apicurio's own API (`registry_url`, /apis/registry/v2); our reader uses its Confluent-
compatible API (`ccompat_url`, /apis/ccompat/v7). The converter frames records as Confluent's do (magic byte 0, then
a 4-byte schema id) when told `as-confluent` and not to put the id in the record's headers (its default); the id it
writes is then Apicurio's global id unless told `use-id=contentId`. The ccompat API's `/schemas/ids/{id}` takes a
content id (unless the server runs in its legacy id mode), so `avro_converters` asks for content ids: the reader's
lookup of a record's id then returns the schema the converter wrote it with.

The Connect worker's class path for these tests is the change-data-capture one (tests/harness/poms/connect.xml)
with the converter added, fetched as its own artifact set.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from kafka_spark.local import jars
from kafka_spark.local.process import ServerProcess, free_port, java_argv

POMS = Path(__file__).parent / "poms"
SERVER_POM = POMS / "apicurio_registry.xml"
SERVER_SET = "apicurio-registry"
CONNECT_SET = "connect-apicurio"
# Quarkus's launcher in quarkus-run.jar (its manifest's Main-Class), started on that jar alone: its manifest
# names the rest of the app's class path
MAIN_CLASS = "io.quarkus.bootstrap.runner.QuarkusEntryPoint"
CONVERTER_VERSION = "2.6.13.Final"
AVRO_CONVERTER = "io.apicurio.registry.utils.converter.AvroConverter"
# Apicurio's parent poms activate their Confluent and JitPack repositories unless this property is set; what the
# builds need is all on Maven Central
MVN_ARGS = ("-DskipDefault",)
# a system property, as the app's profile-specific `%prod.quarkus.package.type=legacy-jar` outranks the pom's
BUILD_ARGS = (*MVN_ARGS, "-Dquarkus.package.type=fast-jar")


def server_dir() -> Path:
    """The folder of the built server (`quarkus-app/`) in the cache, whether or not it exists yet."""
    return jars.cache_dir() / "jars" / SERVER_SET


def ensure() -> Path:
    """Build the server unless the cache holds the build of the current pom; its `quarkus-app` folder."""
    pom = SERVER_POM.read_text()
    target = server_dir()
    stamp_file = target / ".complete"
    stamp = hashlib.sha256("\n".join([pom, *BUILD_ARGS]).encode()).hexdigest()[:16]
    app = target / "quarkus-app"
    if stamp_file.is_file() and stamp_file.read_text() == stamp and (app / "quarkus-run.jar").is_file():
        return app
    if shutil.which("mvn") is None:
        raise jars.JarFetchError("Maven (`mvn`) is not installed; the Apicurio Registry server is built with it")
    work = jars.cache_dir() / "poms"
    work.mkdir(parents=True, exist_ok=True)
    # a build folder of its own, so that concurrent first starts never share one; the result is moved into place
    with tempfile.TemporaryDirectory(prefix=f"{SERVER_SET}-build-", dir=work) as tmp:
        (Path(tmp) / "pom.xml").write_text(pom)
        cmd = ["mvn", "-q", "-B", "-f", str(Path(tmp) / "pom.xml"), *BUILD_ARGS, "package"]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        built = Path(tmp) / "target" / "quarkus-app"
        if proc.returncode != 0 or not (built / "quarkus-run.jar").is_file():
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-25:])
            raise jars.JarFetchError(f"mvn failed to build {SERVER_SET} (exit {proc.returncode}):\n{tail}")
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        shutil.move(str(built), staging / "quarkus-app")
        (staging / ".complete").write_text(stamp)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return app


def connect_pom() -> str:
    """The Connect worker's pom (connect.xml) with Apicurio's converter among its dependencies. The worker's Kafka
    jars stay the only ones: the converter's are left out."""
    base = (POMS / "connect.xml").read_text()
    converter = (
        "    <dependency><groupId>io.apicurio</groupId><artifactId>apicurio-registry-utils-converter</artifactId>"
        f"<version>{CONVERTER_VERSION}</version>\n"
        "      <exclusions><exclusion><groupId>org.apache.kafka</groupId><artifactId>*</artifactId></exclusion>"
        "</exclusions>\n    </dependency>\n")
    head, sep, tail = base.rpartition("  </dependencies>")  # the project's own, after dependencyManagement's
    if not sep:
        raise ValueError("connect.xml has no <dependencies> to add the converter to")
    return (head + converter + sep + tail).replace("<artifactId>connect-classpath</artifactId>",
                                                    "<artifactId>connect-apicurio-classpath</artifactId>", 1)


def connect_classpath() -> str:
    """The Connect worker's class path with the converter (the folder's real path, as the other sets')."""
    folder = jars.fetch_pom(jars.cache_dir() / "jars" / CONNECT_SET, connect_pom(), MVN_ARGS)
    return str(folder.resolve() / "*")


def avro_converters(registry_url: str) -> dict[str, object]:
    """A Connect worker's key and value converter settings: Avro through Apicurio's converter, registering each
    topic's schemas under `<topic>-key` and `<topic>-value` (its default strategy; Confluent's subject names) in
    the registry at `registry_url` (its /apis/registry/v2), framed in the payload as Confluent's converter frames
    them, with the content ids the ccompat API looks schemas up by."""
    settings: dict[str, object] = {}
    for side in ("key", "value"):
        settings[f"{side}.converter"] = AVRO_CONVERTER
        for name, value in {
            "url": registry_url,
            "auto-register": "true",
            # the id in the payload (the converter's default puts it in the record's headers, as Apicurio's own
            # deserializers read it), framed as Confluent's, and the id the ccompat API looks schemas up by
            "headers.enabled": "false",
            "as-confluent": "true",
            "use-id": "contentId",
        }.items():
            settings[f"{side}.converter.apicurio.registry.{name}"] = value
    return settings


class ApicurioRegistry:
    """One Apicurio Registry server, empty when it starts."""

    def __init__(self, data_dir: Path | None = None, heap: str = "256m") -> None:
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-spark-apicurio-")).resolve()
        self.heap = heap
        self.port = 0
        self.process: ServerProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def registry_url(self) -> str:
        """Apicurio's own API, the converter's `apicurio.registry.url`."""
        return f"{self.url}/apis/registry/v2"

    @property
    def ccompat_url(self) -> str:
        """The Confluent-compatible API, a Confluent client's registry URL."""
        return f"{self.url}/apis/ccompat/v7"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "apicurio.log"

    def get(self, path: str) -> Any:
        """GET `path` (under the server's root) as JSON."""
        with urllib.request.urlopen(self.url + path, timeout=5) as answer:
            return json.loads(answer.read())

    def _answers(self) -> bool:
        try:
            self.get("/apis/ccompat/v7/subjects")
        except (urllib.error.URLError, OSError, ValueError):
            return False
        return True

    def start(self, timeout: float = 120.0) -> ApicurioRegistry:
        """Start the server (building it first if the cache has no build); returns once its ccompat API answers."""
        self.begin()
        return self.wait(timeout)

    def begin(self) -> ApicurioRegistry:
        """Start the server's process without waiting for it (`wait` does), to start other servers meanwhile."""
        app = ensure()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        props = [
            "-Djava.util.logging.manager=org.jboss.logmanager.LogManager",  # as Apicurio's images start it
            "-Dquarkus.http.host=127.0.0.1",
            f"-Dquarkus.http.port={self.port}",
        ]
        argv = java_argv(str((app / "quarkus-run.jar").resolve()), MAIN_CLASS, [], heap=self.heap, props=props)
        self.process = ServerProcess("apicurio-registry", argv, self.log_path).start()
        return self

    def wait(self, timeout: float = 120.0) -> ApicurioRegistry:
        if self.process is None:
            raise RuntimeError("the registry was not started")
        self.process.wait_ready(self._answers, timeout)
        return self

    def stop(self, grace: float = 10.0) -> None:
        if self.process:
            self.process.stop(grace)

    def __enter__(self) -> ApicurioRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_apicurio(data_dir: Path | None = None, timeout: float = 120.0) -> ApicurioRegistry:
    """Start an Apicurio Registry on a free port."""
    return ApicurioRegistry(data_dir).start(timeout)


def main() -> None:
    print(f"{SERVER_SET}: {ensure()}")
    print(f"{CONNECT_SET}: {connect_classpath()}")


if __name__ == "__main__":
    main()
