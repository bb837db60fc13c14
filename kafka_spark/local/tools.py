"""Kafka's own Java command-line tools, run from the same class path as the local servers."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from kafka_spark.errors import KafkaSparkError
from kafka_spark.local.config import template, write_properties
from kafka_spark.local.jars import cache_dir, classpath
from kafka_spark.local.process import java_argv

# Tool name -> main class in Kafka 4.
MAIN_CLASSES: dict[str, str] = {
    "topics": "org.apache.kafka.tools.TopicCommand",
    "console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "producer-perf": "org.apache.kafka.tools.ProducerPerformance",
    "consumer-perf": "org.apache.kafka.tools.ConsumerPerformance",
    "consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "dump-log": "kafka.tools.DumpLogSegments",
    "configs": "kafka.admin.ConfigCommand",
    "storage": "kafka.tools.StorageTool",
}
# Tools whose broker address flag is --bootstrap-server; the others take it another way or not at all.
_BOOTSTRAP_FLAG = {"topics", "console-consumer", "console-producer", "consumer-perf", "consumer-groups",
                   "get-offsets", "configs", "delete-records"}


class ToolError(KafkaSparkError):
    """A Kafka Java tool exited with an error."""


class KafkaTools:
    """Runs Kafka's Java tools against one broker address."""

    def __init__(self, artifact_set: str, bootstrap: str) -> None:
        self.artifact_set = artifact_set
        self.bootstrap = bootstrap

    def classpath(self) -> str:
        """The class path the tools run from: the jars of `artifact_set`."""
        return classpath(self.artifact_set)

    def main_class(self, tool: str) -> str:
        return MAIN_CLASSES[tool]

    def log_props(self) -> list[str]:
        """JVM options of the tools' logging: warnings only, to stderr."""
        return [f"-Dlog4j2.configurationFile={template('log4j2-tools.properties', cache_dir() / 'conf')}"]

    def run(self, tool: str, *args: str, input: str | bytes | None = None, check: bool = True,
            timeout: float = 300.0, bootstrap: bool = True) -> subprocess.CompletedProcess[str]:
        """Run `tool` (a key of MAIN_CLASSES) with `args`; `--bootstrap-server` is added where the tool takes it."""
        main = self.main_class(tool)
        full = list(args)
        if bootstrap and tool in _BOOTSTRAP_FLAG and "--bootstrap-server" not in full:
            full = ["--bootstrap-server", self.bootstrap, *full]
        argv = java_argv(self.classpath(), main, full, heap="512m", props=self.log_props(),
                         short_lived=tool not in {"producer-perf", "consumer-perf"})
        text_input = input.decode() if isinstance(input, bytes) else input
        proc = subprocess.run(argv, input=text_input, capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise ToolError(f"{tool} {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        return proc

    def create_topic(self, topic: str, partitions: int = 1, replication: int = 1,
                     configs: Mapping[str, object] | None = None) -> None:
        """Create a topic with TopicCommand."""
        args = ["--create", "--topic", topic, "--partitions", str(partitions),
                "--replication-factor", str(replication)]
        for k, v in (configs or {}).items():
            args += ["--config", f"{k}={v}"]
        self.run("topics", *args)

    def produce_perf(self, topic: str, num_records: int, record_size: int = 100,
                     props: Mapping[str, object] | None = None, payload_file: Path | None = None) -> str:
        """Write `num_records` records of `record_size` bytes (or lines of `payload_file`, picked at random) with
        ProducerPerformance; return its report."""
        producer = {"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 65536,
                    **(props or {})}
        payload = ["--payload-file", str(payload_file)] if payload_file else ["--record-size", str(record_size)]
        proc = self.run("producer-perf", "--topic", topic, "--num-records", str(num_records), *payload,
                        "--throughput", "-1", "--producer-props", *(f"{k}={v}" for k, v in producer.items()))
        return proc.stdout

    def console_produce(self, topic: str, lines: Sequence[str], props: Mapping[str, object] | None = None,
                        key_separator: str | None = None) -> None:
        """Send `lines` with the console producer (`key_separator` splits key and value)."""
        args = ["--topic", topic]
        for k, v in (props or {}).items():
            args += ["--producer-property", f"{k}={v}"]
        if key_separator is not None:
            args += ["--property", "parse.key=true", "--property", f"key.separator={key_separator}"]
        self.run("console-producer", *args, input="".join(line + "\n" for line in lines))

    def dump_log(self, files: Sequence[Path | str], deep: bool = True) -> str:
        """DumpLogSegments output for segment files, with record payloads."""
        args = ["--files", ",".join(str(f) for f in files), "--print-data-log"]
        if deep:
            args.append("--deep-iteration")
        return self.run("dump-log", *args, bootstrap=False).stdout

    def client_config(self, path: Path, props: Mapping[str, object]) -> Path:
        """Write a client properties file (for --command-config, --producer.config, ...)."""
        return write_properties(path, props)
