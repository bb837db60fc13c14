"""The command-line vocabulary every `kafka-spark` command and job shares, Kafka's tools' names first.

Each option group is defined here once. Old spellings stay accepted as hidden aliases: argparse matches
them, `--help` does not show them.
"""

from __future__ import annotations

import argparse
from typing import Any

from kafka_spark.client.config import load_properties, parse_overrides
from kafka_spark.errors import ConfigError


def add_hidden(p: argparse.ArgumentParser | Any, *names: str, dest: str, **kwargs: Any) -> None:
    """Old spellings of an option: parsed into `dest`, left out of --help."""
    p.add_argument(*names, dest=dest, help=argparse.SUPPRESS, **kwargs)


def add_connection_options(p: argparse.ArgumentParser, json_help: str = "machine-readable output") -> None:
    """Where the cluster is and how to reach it: -b, --zookeeper, --command-config, -X; and --json."""
    p.add_argument("-b", "--bootstrap-server", dest="bootstrap_server", metavar="HOST:PORT[,...]",
                   help="the brokers to bootstrap from (bootstrap.servers)")
    add_hidden(p, "--bootstrap-servers", dest="bootstrap_server")
    p.add_argument("--zookeeper", metavar="HOST:PORT[,...][/CHROOT]",
                   help="discover the brokers of a ZooKeeper-mode cluster from its ZooKeeper (zookeeper.connect)")
    p.add_argument("--command-config", metavar="FILE",
                   help="a Java .properties file of client settings (security.protocol, sasl.*, ssl.*, ...)")
    p.add_argument("-X", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="a client property, repeatable, over --command-config (e.g. -X security.protocol=SSL)")
    add_json_option(p, json_help)


def add_json_option(p: argparse.ArgumentParser, text: str = "machine-readable output") -> None:
    p.add_argument("--json", action="store_true", help=text)


def add_topic_options(p: argparse.ArgumentParser, what: str = "a topic", pattern: bool = True,
                      required: bool = False) -> None:
    """--topic (repeatable, comma lists too; old: --topics) and, with `pattern`, --pattern."""
    p.add_argument("--topic", dest="topic", action="append", metavar="TOPIC[,...]", required=required,
                   help=f"{what} (repeatable, or comma-separated)")
    add_hidden(p, "--topics", dest="topic", action="append")
    if pattern:
        p.add_argument("--pattern", metavar="REGEX",
                       help="every topic in whose name this regular expression finds a match (as subscribePattern)")


def add_one_topic_option(p: argparse.ArgumentParser) -> None:
    """--topic of a command that works on exactly one topic."""
    p.add_argument("--topic", required=True, metavar="TOPIC", help="the topic")


def add_partition_option(p: argparse.ArgumentParser) -> None:
    """--partition (repeatable, comma lists too; old: --partitions)."""
    p.add_argument("--partition", dest="partition", action="append", default=[], metavar="N[,...]",
                   help="only this partition (repeatable, or comma-separated; default: all)")
    add_hidden(p, "--partitions", dest="partition", action="append")


def add_group_option(p: argparse.ArgumentParser, text: str, *old: str) -> None:
    """--group, the consumer group (old spellings in `old`)."""
    p.add_argument("--group", metavar="GROUP", help=text)
    if old:
        add_hidden(p, *old, dest="group")


def add_sink_id_option(p: argparse.ArgumentParser, text: str) -> None:
    """--sink-id, the pipeline's name in a Delta table (old: --sink)."""
    p.add_argument("--sink-id", dest="sink_id", metavar="ID", help=text)
    add_hidden(p, "--sink", dest="sink_id")


def add_isolation_option(p: argparse.ArgumentParser, text: str = "read_committed: skip aborted transactions, "
                         "and latest is the last stable offset") -> None:
    p.add_argument("--isolation-level", choices=["read_uncommitted", "read_committed"], help=text)


def add_data_loss_option(p: argparse.ArgumentParser, dest: str = "fail_on_data_loss") -> None:
    """--fail-on-data-loss true|false (old: --skip-lost, the same as false)."""
    p.add_argument("--fail-on-data-loss", dest=dest, metavar="true|false",
                   help="fail when offsets were deleted by retention before they were read (default true)")
    add_hidden(p, "--skip-lost", dest=dest, action="store_const", const="false")


def add_format_options(p: argparse.ArgumentParser, bad_record: str) -> None:
    """How keys and values decode: --value-format, --key-format, the schema registry and the subjects.
    `bad_record` says what a record that does not decode does."""
    for side in ("value", "key"):
        p.add_argument(f"--{side}-format", metavar="FORMAT",
                       help=f"decode each {side} in Confluent's wire format with its schema from the registry: avro, "
                            f"protobuf or json-schema (default binary: the bytes as they are); {bad_record}")
    p.add_argument("--schema-registry", metavar="URL[,...]",
                   help="the schema registry's URL (comma-separated for several; schema.registry.url)")
    p.add_argument("--schema-registry-config", metavar="FILE",
                   help="a Java .properties file of schema registry settings (basic.auth.user.info, "
                        "bearer.auth.token, ssl.ca.location, ...; the schema.registry. prefix optional): keep "
                        "secrets there rather than on the command line")
    for side in ("value", "key"):
        p.add_argument(f"--{side}-subject", metavar="SUBJECT",
                       help=f"the subject whose latest schema the {side}s decode with (default: <topic>-{side})")


def topics_of(args: argparse.Namespace) -> list[str]:
    """The --topic values, comma lists split, in order, without repeats."""
    names = [part.strip() for item in (args.topic or []) for part in item.split(",")]
    return list(dict.fromkeys(n for n in names if n))


def partitions_of(args: argparse.Namespace) -> set[int] | None:
    """The --partition numbers, or None for all."""
    items = [part.strip() for item in (args.partition or []) for part in str(item).split(",") if part.strip()]
    if not items:
        return None
    try:
        return {int(x) for x in items}
    except ValueError:
        raise ConfigError(f"--partition: {','.join(items)!r} is not a list of numbers") from None


def command_config(path: str | None) -> dict[str, str]:
    """The client settings of a --command-config file (none without one)."""
    if not path:
        return {}
    try:
        return load_properties(path)
    except OSError as exc:
        raise ConfigError(f"--command-config: cannot read {path}: {exc.strerror}") from None


def overrides(items: list[str]) -> dict[str, str]:
    """-X KEY=VALUE items as properties; a malformed one is an error naming -X."""
    try:
        return parse_overrides(items)
    except ConfigError as exc:
        raise ConfigError(f"-X: {exc}") from None


def client_props(args: argparse.Namespace) -> dict[str, Any]:
    """Client properties from --command-config, -X, --bootstrap-server and --zookeeper (later ones win); may
    lack a bootstrap."""
    props: dict[str, Any] = command_config(args.command_config)
    props.update(overrides(args.overrides))
    if args.bootstrap_server:
        props["bootstrap.servers"] = args.bootstrap_server
    if args.zookeeper:
        props["zookeeper.connect"] = args.zookeeper
    return props


def has_cluster(props: dict[str, Any]) -> bool:
    """Whether the properties say where the brokers are (directly or through ZooKeeper)."""
    return "bootstrap.servers" in props or "zookeeper.connect" in props
