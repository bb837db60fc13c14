"""`kafka-spark local start|stop|status`: a local single-node broker for demos and notebooks."""

from __future__ import annotations

import argparse
import json

from kafka_spark.local import broker_daemon as daemon
from kafka_spark.local.jars import ARTIFACT_SETS, ensure_jars


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("local", help="start, stop or inspect a local Kafka broker for demos; fetch the jars")
    p.add_argument("action", choices=["start", "stop", "status", "fetch"],
                   help="fetch: download the broker's jars (Kafka 4) and Spark's (Delta, its Kafka connector, s3a) "
                        "into the cache")
    p.add_argument("--secure", action="store_true",
                   help="also open SASL_PLAINTEXT, SASL_SSL, SSL and MTLS listeners (start)")
    p.add_argument("--json", action="store_true", help="print the broker record as JSON")
    p.set_defaults(run=run)


def _show(broker: daemon.LocalBroker, as_json: bool, verb: str) -> None:
    if as_json:
        print(json.dumps({"bootstrap": broker.bootstrap, "pid": broker.pid, "listeners": broker.listeners,
                          "data_dir": broker.data_dir, "ca_pem": broker.ca_pem}))
        return
    print(f"{verb}: {broker.bootstrap}  (pid {broker.pid}, data {broker.data_dir})")
    for name, port in broker.listeners.items():
        if name != "PLAINTEXT":
            print(f"  {name}: 127.0.0.1:{port}")


def run(args: argparse.Namespace) -> int:
    if args.action == "fetch":
        for name in ARTIFACT_SETS:
            print(f"{name}: {ensure_jars(name)}")
        return 0
    if args.action == "start":
        broker, started = daemon.start(secure=args.secure)
        _show(broker, args.json, "started" if started else "already running")
        return 0
    if args.action == "stop":
        print("stopped" if daemon.stop() else "not running")
        return 0
    running = daemon.status()
    if running is None:
        print("not running")
        return 1
    if not daemon.responding(running):
        print(f"process {running.pid} is up but {running.bootstrap} does not answer")
        return 1
    _show(running, args.json, "running")
    return 0
