"""On a PySpark that no delta-spark release supports (4.3), what needs Delta Lake on Spark fails with one line naming
the feature, the PySpark version and what to do instead; the rest, the direct writer among it, needs nothing of it."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_spark.delta.catalog import create_catalog_table
from kafka_spark.delta.dead_letter import check_options
from kafka_spark.delta.writer_choice import choose_writer
from kafka_spark.errors import ConfigError
from kafka_spark.sink import LoadOptions
from kafka_spark.sink.options import SinkTarget, ValueParsing
from kafka_spark.spark import versions
from kafka_spark.spark.versions import DeltaSparkError, PySparkVersionError, require_delta_spark, session_has_delta

ADVICE = ("needs Delta Lake on Spark (delta-spark), which has no release for PySpark 4.3.0 yet (the newest supports "
          "PySpark 4.2): write with the direct writer (writer='direct', Delta through delta-rs), or use PySpark 4.2 "
          "or older")


class FakeSession:
    """A classic session's JVM side, as far as the `delta` data source lookup goes."""

    def __init__(self, lookup_error: str | None) -> None:
        self.lookup_error = lookup_error
        self._jvm = self
        self._jsparkSession = self
        self.org = self.apache = self.spark = self.sql = self.execution = self.datasources = self.DataSource = self

    def lookupDataSource(self, name: str, conf: Any) -> object:
        assert name == "delta"
        if self.lookup_error is not None:
            raise RuntimeError(self.lookup_error)
        return object()

    def sessionState(self) -> FakeSession:
        return self

    def conf(self) -> object:
        return object()


@pytest.fixture
def pyspark_4_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versions, "pyspark_version", lambda: "4.3.0")


def test_the_error_names_the_feature_the_version_and_the_way_out() -> None:
    with pytest.raises(DeltaSparkError) as caught:
        require_delta_spark("writer 'spark'", version="4.3.0")
    assert str(caught.value) == f"writer 'spark' {ADVICE}"
    assert isinstance(caught.value, PySparkVersionError) and isinstance(caught.value, ConfigError)


@pytest.mark.parametrize("version", ["4.0.5", "4.1.4", "4.2.0", "4.2.1"])
def test_pyspark_with_a_delta_spark_release_passes(version: str) -> None:
    require_delta_spark("writer 'spark'", version=version)


def test_a_session_that_has_delta_of_its_own_passes() -> None:
    require_delta_spark("writer 'spark'", FakeSession(None), "4.3.0")
    assert session_has_delta(FakeSession(None)) is True


def test_a_session_without_delta_fails() -> None:
    missing = FakeSession("[DATA_SOURCE_NOT_FOUND] Failed to find the data source: delta.")
    assert session_has_delta(missing) is False
    with pytest.raises(DeltaSparkError, match=r"^writer 'spark' needs Delta Lake on Spark"):
        require_delta_spark("writer 'spark'", missing, "4.3.0")


def test_a_session_that_cannot_be_asked_is_left_to_spark() -> None:
    # Spark Connect has no JVM gateway; a gateway may refuse the call: Spark's own error then says what is missing.
    assert session_has_delta(object()) is None
    assert session_has_delta(FakeSession("py4j.security.Py4JSecurityException: not whitelisted")) is None
    require_delta_spark("writer 'spark'", object(), "4.3.0")


@pytest.mark.usefixtures("pyspark_4_3")
def test_spark_writer_asked_for_on_4_3() -> None:
    options = LoadOptions(table="/lake/t", kafka={"bootstrap.servers": "b:9092"}, topics=["t"], writer="spark")
    with pytest.raises(DeltaSparkError) as caught:
        choose_writer(None, options, None)
    assert str(caught.value) == f"/lake/t: writer 'spark' (Spark's Delta writer) {ADVICE}"


@pytest.mark.usefixtures("pyspark_4_3")
def test_dead_letter_table_on_4_3() -> None:
    parsing = ValueParsing(value_schema="a INT", dead_letter="/lake/bad")
    with pytest.raises(DeltaSparkError, match=r"^dead_letter '/lake/bad' \(written by Spark's Delta writer\) needs"):
        check_options(None, SinkTarget("/lake/t"), parsing)


@pytest.mark.usefixtures("pyspark_4_3")
def test_new_catalog_table_on_4_3() -> None:
    with pytest.raises(DeltaSparkError, match=r"^creating the catalog table db\.t \(Delta's DeltaTable API\) needs"):
        create_catalog_table(None, "db.t", None)
