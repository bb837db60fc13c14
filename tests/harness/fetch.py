"""The jars of the servers only the tests start, fetched with Maven as the package fetches its own
(kafka_spark/local/jars.py) and kept in the same cache: Kafka 3.9 with the ZooKeeper it ships with, navikt's
mock-oauth2-server, and Kafka Connect with Debezium's PostgreSQL connector. `kafka-spark local fetch` leaves them
out; the test set-up (`.ci/setup --tests`) runs this module, which fetches them and writes the class archives of
the Kafka 3.9 and ZooKeeper servers."""

from __future__ import annotations

from pathlib import Path

from kafka_spark.local import jars

POMS = Path(__file__).parent / "poms"
# artifact set -> its pom in tests/harness/poms
TEST_SETS = {"kafka39": "kafka39.xml", "oauth": "oauth.xml", "connect": "connect.xml", "iceberg": "iceberg_spark.xml"}


def jar_dir(name: str) -> Path:
    """The folder of an artifact set's jars, the tests' or the package's (whether or not it exists yet)."""
    return jars.cache_dir() / "jars" / name if name in TEST_SETS else jars.jar_dir(name)


def ensure(name: str) -> Path:
    """Fetch the artifact set `name` (the tests' or the package's) unless the cache holds it; its jar folder."""
    if name not in TEST_SETS:
        return jars.ensure_jars(name)
    return jars.fetch_pom(jar_dir(name), (POMS / TEST_SETS[name]).read_text())


def classpath(name: str) -> str:
    """A Java class path (`dir/*`, the folder's real path, as `kafka_spark.local.jars.classpath`) for `name`."""
    return str(ensure(name).resolve() / "*")


def main() -> None:
    for name in TEST_SETS:
        print(f"{name}: {ensure(name)}")
    from harness.kafka39 import build_server_archives

    for archive in build_server_archives():
        print(f"class archive: {archive}")


if __name__ == "__main__":
    main()
