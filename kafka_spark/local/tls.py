"""Throwaway test certificates, made with the JDK's keytool: a CA, a broker certificate for
127.0.0.1/localhost, and client certificates (one from the CA, one from another CA) as PEM files.

keytool cannot export a private key, so the client keys reach PEM through `openssl pkcs12`. Debian's
JDK depends on ca-certificates, which depends on openssl, so the binary is there wherever keytool is.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

# Only protects throwaway test keystores and keys; never a real secret.
STORE_PASSWORD = "changeit"
CLIENT_KEY_PASSWORD = "client-key-secret"
CLIENT_NAME = "kafka-spark-test-client"

# Each keytool run is a fresh JVM; these flags roughly halve its start-up.
_FAST_JVM = ("-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC")
# EC keys: keytool makes them several times faster than RSA ones.
_KEY = ("-keyalg", "EC", "-groupname", "secp256r1", "-validity", "3650")
_STORE = ("-storetype", "PKCS12", "-storepass", STORE_PASSWORD, "-keypass", STORE_PASSWORD)


@dataclass(frozen=True)
class TlsMaterial:
    ca_pem: Path                 # trust anchor for clients, and for the broker's client-certificate listener
    broker_p12: Path             # PKCS12 keystore: the broker key and its chain up to the CA
    client_pem: Path             # a CA-signed client certificate and its unencrypted key
    client_encrypted_pem: Path   # the same certificate with its key encrypted by `client_key_password`
    foreign_ca_pem: Path         # another CA, which the broker does not trust
    foreign_client_pem: Path     # a client certificate and key signed by the other CA
    password: str = STORE_PASSWORD
    client_key_password: str = CLIENT_KEY_PASSWORD


def _run(argv: list[str], cwd: Path) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} {argv[1]} failed: {proc.stdout}{proc.stderr}")
    return proc.stdout


def _keytool(*args: str, cwd: Path) -> None:
    _run(["keytool", *_FAST_JVM, *args], cwd)


def _new_ca(directory: Path, alias: str, name: str) -> Path:
    """A self-signed CA in `<alias>.p12`; returns its certificate `<alias>.pem`."""
    _keytool("-genkeypair", "-alias", alias, "-dname", f"CN={name}", "-ext", "bc:c", *_KEY,
             "-keystore", f"{alias}.p12", *_STORE, cwd=directory)
    _keytool("-exportcert", "-rfc", "-alias", alias, "-keystore", f"{alias}.p12", "-storepass", STORE_PASSWORD,
             "-file", f"{alias}.pem", cwd=directory)
    return directory / f"{alias}.pem"


def _signed(directory: Path, alias: str, dname: str, ca: Future[Path], *extensions: str) -> Path:
    """A key in `<alias>.p12` and its certificate `<alias>.crt`, signed by the CA once `ca` is made."""
    _keytool("-genkeypair", "-alias", alias, "-dname", dname, *_KEY, "-keystore", f"{alias}.p12", *_STORE,
             cwd=directory)
    _keytool("-certreq", "-alias", alias, "-keystore", f"{alias}.p12", "-storepass", STORE_PASSWORD,
             "-file", f"{alias}.csr", cwd=directory)
    ca_alias = ca.result().stem
    _keytool("-gencert", "-alias", ca_alias, "-keystore", f"{ca_alias}.p12", "-storepass", STORE_PASSWORD,
             "-infile", f"{alias}.csr", "-outfile", f"{alias}.crt", "-rfc", "-validity", "3650", *extensions,
             cwd=directory)
    return directory / f"{alias}.crt"


def _install_chain(directory: Path, alias: str, ca_pem: Path) -> Path:
    """Put the signed certificate and the CA behind the key in `<alias>.p12` (what a broker serves)."""
    chain = directory / f"{alias}-chain.pem"
    chain.write_text((directory / f"{alias}.crt").read_text() + ca_pem.read_text())
    _keytool("-importcert", "-noprompt", "-alias", alias, "-file", chain.name, "-keystore", f"{alias}.p12",
             "-storetype", "PKCS12", "-storepass", STORE_PASSWORD, cwd=directory)
    return directory / f"{alias}.p12"


def _client_pem(directory: Path, alias: str, target: str, key_password: str | None = None) -> Path:
    """`<alias>.crt` and the key from `<alias>.p12` in one PEM file, the key encrypted if `key_password`."""
    encryption = ["-passout", f"pass:{key_password}"] if key_password else ["-nodes"]
    out = _run(["openssl", "pkcs12", "-in", f"{alias}.p12", "-passin", f"pass:{STORE_PASSWORD}", "-nocerts",
                *encryption], directory)
    key = out[out.index("-----BEGIN"):]
    path = directory / target
    path.write_text((directory / f"{alias}.crt").read_text() + key)
    path.chmod(0o600)
    return path


def make_tls(directory: Path, ca_name: str = "kafka-spark-test-ca") -> TlsMaterial:
    """Create the CA, broker keystore and client PEM files in `directory` (all valid for ten years)."""
    if shutil.which("openssl") is None:
        raise RuntimeError("the openssl command is needed to export test client keys (apt-get install openssl)")
    directory.mkdir(parents=True, exist_ok=True)
    client_dname = f"CN={CLIENT_NAME}"
    # independent keytool runs overlap: start-up time stays close to one chain of them
    with ThreadPoolExecutor(max_workers=5) as pool:
        ca = pool.submit(_new_ca, directory, "ca", ca_name)
        foreign_ca = pool.submit(_new_ca, directory, "foreign-ca", f"{ca_name}-foreign")
        broker = pool.submit(_signed, directory, "broker", "CN=localhost", ca,
                             "-ext", "SAN=DNS:localhost,IP:127.0.0.1", "-ext", "EKU=serverAuth,clientAuth")
        client = pool.submit(_signed, directory, "client", client_dname, ca, "-ext", "EKU=clientAuth")
        foreign = pool.submit(_signed, directory, "foreign-client", client_dname, foreign_ca, "-ext", "EKU=clientAuth")
        broker_p12 = _install_chain(directory, broker.result().stem, ca.result())
        client.result(), foreign.result()
    return TlsMaterial(
        ca_pem=ca.result(), broker_p12=broker_p12,
        client_pem=_client_pem(directory, "client", "client.pem"),
        client_encrypted_pem=_client_pem(directory, "client", "client-encrypted.pem", CLIENT_KEY_PASSWORD),
        foreign_ca_pem=foreign_ca.result(),
        foreign_client_pem=_client_pem(directory, "foreign-client", "foreign-client.pem"),
    )
