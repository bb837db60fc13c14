"""No secret leaves a secure run: the SASL password, the private key's password, the key itself (given
inline) and the JAAS config text are grepped for in everything a run shows or keeps — the kafka_spark
loggers at DEBUG in every Python process, the driver's and Spark's console output (Spark at INFO), the
exceptions of runs with a wrong password and a wrong key password, explain() and plan strings, the Spark
UI's SQL, environment, jobs, stages and streaming pages and its REST API, the Spark event log, the Delta
tables' _delta_log and kept offsets, the stream's checkpoint and progress, and the job's --json output.
The first run also plans a back-fill from log dirs in object stores whose credentials (an Azure account key,
an S3A per-bucket secret key, an ABFS OAuth client secret, a GCS private key) the session holds, and writes and
logs the repr of every options class holding its client properties, registry settings and store keys: those
are grepped for too. A second run logs in with OAUTHBEARER (OIDC client credentials) and is grepped for the
client secret the same way."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from harness.oauth import CLIENT_SECRET, oidc

from kafka_spark.client import Producer
from kafka_spark.local.kafka import SASL_USERS

HERE = Path(__file__).parent
USER = "alice"
PASSWORD = SASL_USERS[USER]
WRONG = "wrong-" + PASSWORD + "-7"
WRONG_KEY = "wrong-key-password-7"
# No word Spark's default pattern matches (secret, password, token, access key) in these values: Spark would hide
# any value holding one, whatever its name, and the grep would prove nothing.
STORE_KEY = "fs.azure.account.key.acct47.dfs.core.windows.net"
STORES = {STORE_KEY: "QXp1cmUgYWNjb3VudCBrZXkgNDc=", "fs.s3a.bucket.vault47.secret.key": "wJalrXUtnFEMI-K7MDENG-47",
          "fs.azure.account.oauth2.client.secret": "abfs-oauth-client-Q47~z",
          "fs.gs.auth.service.account.private.key": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-gcs47"}
REGISTRY = {"url": "http://registry.invalid:8081", "basic.auth.user.info": "registry-user:Reg1stry-47"}
# Every Python process of the run (driver, Spark's Python workers) logs kafka_spark at DEBUG to its own file.
SITECUSTOMIZE = '''
import logging, os
_path = os.environ.get("KAFKA_SPARK_DEBUG_LOG")
if _path:
    _handler = logging.FileHandler(f"{_path}.{os.getpid()}")
    _handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
    _logger = logging.getLogger("kafka_spark")
    _logger.setLevel(logging.DEBUG)
    _logger.addHandler(_handler)
'''


def jaas(password: str) -> str:
    return (f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{USER}" '
            f'password="{password}";')


def secure_options(kafka, password: str = PASSWORD, key_password: str | None = None) -> dict[str, str]:
    """SCRAM over TLS, and a client certificate whose encrypted key is given inline (ssl.keystore.key)."""
    pem = kafka.tls.client_encrypted_pem.read_text()
    key_start = pem.index("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    return {
        "bootstrap.servers": kafka.address("SASL_SSL"), "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas(password),
        "ssl.truststore.location": str(kafka.ca_pem), "ssl.truststore.type": "PEM",
        "ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": pem[:key_start].strip(),
        "ssl.keystore.key": pem[key_start:].strip(),
        "ssl.key.password": key_password or kafka.tls.client_key_password,
        "request.timeout.ms": "5000", "default.api.timeout.ms": "10000",
    }


def texts(root: Path) -> dict[str, str]:
    """Every readable text file under `root` (not the tables' Parquet data), by path."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix != ".parquet" and not path.name.endswith(".crc"):
            out[str(path.relative_to(root))] = path.read_text(errors="replace")
    return out


def _secure_run(tmp_path: Path, settings: dict) -> dict[str, str]:
    """Run secure_run.py with `settings` in a fresh process; every text it showed or kept, by where."""
    (tmp_path / "events").mkdir()
    settings = {**settings, "event_log": str(tmp_path / "events")}
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    out = tmp_path / "out"
    env = {**os.environ, "KAFKA_SPARK_DEBUG_LOG": str(tmp_path / "logs" / "debug.log"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path / "site"), os.environ.get("PYTHONPATH")])),
           "KAFKA_SPARK_SPARK_LOG_LEVEL": "INFO"}
    (tmp_path / "logs").mkdir()
    started = time.monotonic()
    proc = subprocess.run([sys.executable, str(HERE / "secure_run.py"), str(tmp_path / "settings.json"), str(out)],
                          capture_output=True, text=True, timeout=900, env=env, check=False)
    steps = [line for line in proc.stdout.splitlines() if re.match(r"^[a-zA-Z ]+: [0-9.]+s$", line)]
    print(f"secure run: exit {proc.returncode} in {time.monotonic() - started:.0f}s ({', '.join(steps)})")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]

    shown = {"console stdout": proc.stdout, "console stderr": proc.stderr}
    for kind, root in (("out", out), ("event log", tmp_path / "events"), ("debug log", tmp_path / "logs")):
        shown |= {f"{kind}: {name}": text for name, text in texts(root).items()}
    return shown


def _place(shown: dict[str, str], prefix: str) -> str:
    return "\n".join(text for name, text in shown.items() if name.startswith(prefix))


def _assert_every_place_was_seen(shown: dict[str, str], topic: str) -> None:
    # each place was really looked at: it holds what a run with these options puts there
    def place(prefix: str) -> str:
        return _place(shown, prefix)

    assert "pykafka" in place("out: explain.txt") and "pykafka" in place("out: plans.txt")
    assert "SparkListenerSQLExecutionStart" in place("event log") and "sasl" in place("event log").lower()
    assert "spark.app.name" in place("out: ui/environment") and "execution" in place("out: ui/sql").lower()
    assert len([n for n in shown if n.startswith("debug log")]) >= 2, "no Python worker wrote a debug log"
    assert "DEBUG" in place("debug log") or "INFO" in place("debug log")
    assert "commitInfo" in place("out: stream/_delta_log") and "txn" in place("out: load/_delta_log")
    assert "assign" in place("event log") and topic in place("out: ui/sql"), "the plans' options were not shown"
    assert '"status": "committed"' in place("out: job_stdout")
    assert "numInputRows" in place("out: progress.json")


def _assert_hidden(shown: dict[str, str], secrets: dict[str, str]) -> None:
    leaks = [f"{what} in {name}" for name, text in shown.items() for what, secret in secrets.items()
             if secret in text]
    print(f"grepped {len(shown)} files/streams, {sum(map(len, shown.values())) / 2**20:.1f} MiB")
    assert not leaks, "\n".join(leaks)


def _topic(node, prefix: str) -> str:
    # no "secret" in names: Spark would redact every value holding one and hide what the grep should see
    topic = f"{prefix}-{int(time.time() * 1000)}"
    node.create_topic(topic, partitions=2)
    with Producer({"bootstrap.servers": node.bootstrap, "linger.ms": 5}) as producer:
        for i in range(300):
            producer.send(topic, f'{{"n":{i}}}'.encode(), key=str(i % 5).encode())
        producer.flush(60)
    return topic


def test_a_secure_run_shows_no_credential_anywhere(kafka, tmp_path: Path) -> None:
    topic = _topic(kafka, "secure-run")
    options = secure_options(kafka)
    key_body = options["ssl.keystore.key"].splitlines()[1]  # a line of the encrypted key's base64
    settings = {"topic": topic, "options": options, "wrong": secure_options(kafka, WRONG),
                "wrong_key": secure_options(kafka, key_password=WRONG_KEY), "stores": STORES, "registry": REGISTRY}
    shown = _secure_run(tmp_path, settings)
    _assert_every_place_was_seen(shown, topic)
    errors = _place(shown, "out: errors.txt")
    assert "SASL_AUTHENTICATION_FAILED" in errors or "Authentication failed" in errors
    assert "ssl.key.password does not decrypt" in errors
    _assert_hidden(shown, {"SASL password": PASSWORD, "wrong SASL password": WRONG,
                           "key password": kafka.tls.client_key_password, "wrong key password": WRONG_KEY,
                           "JAAS config": jaas(PASSWORD), "JAAS password assignment": 'password="',
                           "private key": key_body, "registry user info": REGISTRY["basic.auth.user.info"],
                           **{f"store credential {key}": value for key, value in STORES.items()}})
    # the back-fill's read and the session's store settings were recorded, and the reprs written and logged
    assert "pykafka-log" in _place(shown, "out: log_load_explain.txt")
    assert f"{STORE_KEY}=*********(redacted)" in _place(shown, "event log")
    assert "fs.gs.auth.service.account.private.key" in _place(shown, "event log")
    assert "LoadOptions(" in _place(shown, "out: reprs.txt") and "LogOptions(" in _place(shown, "debug log")


def test_an_oidc_run_shows_no_client_secret_anywhere(oauth_kafka, oauth_server, tmp_path: Path) -> None:
    topic = _topic(oauth_kafka, "oidc-run")
    limits = {"request.timeout.ms": "5000", "default.api.timeout.ms": "10000"}
    options = {**oidc(oauth_kafka, oauth_server), **limits}
    # the same secret, and a token endpoint nothing answers on: the login fails after its retries
    path = oauth_server.token_url.split("/", 3)[3]
    wrong = {**options, "sasl.oauthbearer.token.endpoint.url": f"http://127.0.0.1:1/{path}",
             "sasl.login.retry.backoff.max.ms": "500"}
    shown = _secure_run(tmp_path, {"topic": topic, "options": options, "wrong": wrong})
    _assert_every_place_was_seen(shown, topic)
    assert "cannot reach it" in _place(shown, "out: errors.txt")
    _assert_hidden(shown, {"OIDC client secret": CLIENT_SECRET, "JAAS config": options["sasl.jaas.config"],
                           "JAAS secret assignment": 'clientSecret="'})
