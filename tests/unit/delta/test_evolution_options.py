"""schemaEvolutionMode=addNewColumns: the sink's own mode. Its reads stop on a record newer than the batch's
version (restart), its writes merge the new columns, a Spark query refuses it, and a failed job whose task met a
newer version is recognised as such."""

from __future__ import annotations

import pytest

from kafka_spark.errors import ConfigError, SchemaChangedError
from kafka_spark.formats.options import payload_options
from kafka_spark.sink import LoadOptions, Routing
from kafka_spark.sink.commits import following_schema
from kafka_spark.sink.results import LoadResult
from kafka_spark.sink.routed import RoutedTable
from kafka_spark.sink.table_format import TableWrites
from kafka_spark.spark.failures import schema_changed

REGISTRY = {"url": "http://127.0.0.1:1"}


def _options(**format_options: str) -> LoadOptions:
    return LoadOptions(table="/t", topics=["orders"], value_format="avro", schema_registry=REGISTRY,
                       format_options=format_options)


@pytest.mark.parametrize("name", ["schemaEvolutionMode", "avroSchemaEvolutionMode", "SCHEMAEVOLUTIONMODE"])
def test_add_new_columns_reads_in_restart_mode_and_merges(name):
    options = _options(**{name: "addNewColumns"})
    assert options.evolving
    assert options.format.merge_schema
    assert options.decoding[name] == "restart"
    decoding = payload_options(options.source.read_flags())
    assert decoding is not None and decoding.restart_on_new_schema


@pytest.mark.parametrize("mode", ["none", "restart"])
def test_other_modes_pass_through_and_do_not_merge(mode):
    options = _options(schemaEvolutionMode=mode)
    assert not options.evolving and not options.format.merge_schema
    assert options.decoding["schemaEvolutionMode"] == mode


def test_without_a_registry_format_nothing_evolves():
    options = LoadOptions(table="/t", topics=["orders"], format_options={"schemaEvolutionMode": "addNewColumns"})
    assert not options.evolving and options.decoding == {}


def test_routed_tables_follow_the_mode_of_their_options():
    options = LoadOptions(topics=["a", "b"], value_format="avro", schema_registry=REGISTRY,
                          format_options={"schemaEvolutionMode": "addNewColumns"},
                          routing=Routing(template="/lake/{topic}"))
    assert options.evolving


def test_a_spark_query_refuses_the_sinks_mode_naming_what_to_do():
    with pytest.raises(ConfigError, match=r"addNewColumns is the sink's mode .* a Spark query's schema is fixed"):
        payload_options({"valueFormat": "avro", "schema.registry.url": "http://r:1",
                         "schemaEvolutionMode": "addNewColumns"})


def test_schema_changed_is_recognised_in_a_failed_jobs_text():
    assert schema_changed(SchemaChangedError("newer"))
    task_text = ("Job aborted due to stage failure: ... kafka_spark.errors.base.SchemaChangedError: orders [0] "
                 "offset 7: the value was written with schema id 3")
    assert schema_changed(RuntimeError(task_text))
    assert not schema_changed(RuntimeError("Job aborted: PayloadError: does not decode"))


class _Writes(TableWrites):
    """Commits that fail as a Spark job whose task met a newer version, `failures` times, then succeed."""

    def __init__(self, failures: int) -> None:
        self.failures, self.chosen, self.commits = failures, 0, 0

    def writer(self, routed, location):
        self.chosen += 1

    def reads_own(self, routed):
        return True

    def add(self, routed, plan, commit):
        pass

    def spark_rows(self, routed):
        return False

    def write_files(self):
        pass

    def commit(self, routed, rows, label, location, progress=True):
        self.commits += 1
        if self.commits <= self.failures:
            raise RuntimeError("Job aborted: kafka_spark.errors.base.SchemaChangedError: written with id 4")
        return LoadResult("committed", routed.options.sink_id, 0)


def _commit(writes: _Writes, options: LoadOptions):
    routed = RoutedTable(("orders",), "/t", options)
    return following_schema(writes, routed, None, lambda: writes.commit(routed, lambda: None, "batch 0", None))


def test_an_evolving_commit_is_written_again_once_with_its_writer_chosen_again():
    writes = _Writes(failures=1)
    assert _commit(writes, _options(schemaEvolutionMode="addNewColumns")).status == "committed"
    assert (writes.commits, writes.chosen) == (2, 1)
    twice = _Writes(failures=2)  # a version registered during the retry too: the batch fails, and its stream
    with pytest.raises(RuntimeError, match="SchemaChangedError"):
        _commit(twice, _options(schemaEvolutionMode="addNewColumns"))


def test_a_restart_mode_commit_stops_on_a_newer_version():
    writes = _Writes(failures=1)
    with pytest.raises(RuntimeError, match="SchemaChangedError"):
        _commit(writes, _options(schemaEvolutionMode="restart"))
    assert (writes.commits, writes.chosen) == (1, 0)
