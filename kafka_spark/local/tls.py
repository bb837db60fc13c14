"""A throwaway test CA and a broker certificate for 127.0.0.1/localhost, made with the JDK's keytool."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

# Only protects throwaway test keystores; never a real secret.
STORE_PASSWORD = "changeit"


@dataclass(frozen=True)
class TlsMaterial:
    ca_pem: Path          # trust anchor for clients
    broker_p12: Path      # PKCS12 keystore with the broker key, its CA-signed cert and the CA
    password: str = STORE_PASSWORD


def _keytool(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["keytool", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"keytool {args[0]} failed: {proc.stdout}{proc.stderr}")


def make_tls(directory: Path, ca_name: str = "kafka-spark-test-ca") -> TlsMaterial:
    """Create a CA and a broker keystore in `directory` (both valid for ten years)."""
    directory.mkdir(parents=True, exist_ok=True)
    pw = STORE_PASSWORD
    store = ("-storetype", "PKCS12", "-storepass", pw, "-keypass", pw)
    _keytool("-genkeypair", "-alias", "ca", "-dname", f"CN={ca_name}", "-ext", "bc:c", "-keyalg", "RSA",
             "-keysize", "2048", "-validity", "3650", "-keystore", "ca.p12", *store, cwd=directory)
    _keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore", "ca.p12", "-storepass", pw, "-file", "ca.pem",
             cwd=directory)
    _keytool("-genkeypair", "-alias", "broker", "-dname", "CN=localhost", "-keyalg", "RSA", "-keysize", "2048",
             "-validity", "3650", "-keystore", "broker.p12", *store, cwd=directory)
    _keytool("-certreq", "-alias", "broker", "-keystore", "broker.p12", "-storepass", pw, "-file", "broker.csr",
             cwd=directory)
    _keytool("-gencert", "-alias", "ca", "-keystore", "ca.p12", "-storepass", pw, "-infile", "broker.csr",
             "-outfile", "broker.pem", "-rfc", "-validity", "3650", "-ext", "SAN=DNS:localhost,IP:127.0.0.1",
             "-ext", "EKU=serverAuth,clientAuth", cwd=directory)
    for alias, f in (("ca", "ca.pem"), ("broker", "broker.pem")):
        _keytool("-importcert", "-noprompt", "-alias", alias, "-file", f, "-keystore", "broker.p12",
                 "-storetype", "PKCS12", "-storepass", pw, cwd=directory)
    return TlsMaterial(ca_pem=directory / "ca.pem", broker_p12=directory / "broker.p12")
