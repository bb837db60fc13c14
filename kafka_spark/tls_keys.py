"""Loading a client certificate and its private key into a TLS context without OpenSSL ever prompting.

Given no password, OpenSSL asks for an encrypted key's one on the terminal, which hangs a Spark executor (or
any process without a terminal) for good. Every TLS client of the package (brokers, the schema registry)
loads its key through `load_key_pair`, which always hands OpenSSL a password callback.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable


def load_key_pair(context: ssl.SSLContext, certificate: str, key: str | None, password: str | None, *,
                  setting: str, password_setting: str, error: Callable[[str], Exception]) -> None:
    """Load the PEM certificate chain at `certificate` and its private key (in `key`, or in the same file when
    None) into `context`, decrypting the key with `password` when it is encrypted.

    Failures raise `error(message)`, the message naming `setting` (the option that gave the files) and, for an
    encrypted key without a password or with a wrong one, `password_setting`; never the password itself.
    OSError when a file cannot be read.
    """
    asked = False

    def give_password() -> str:
        nonlocal asked
        asked = True
        if password is None:
            raise error(f"{setting}: the private key is encrypted; set {password_setting}")
        return password

    try:
        context.load_cert_chain(certificate, key, password=give_password)
    except ssl.SSLError as exc:
        if asked:
            raise error(f"{setting}: {password_setting} does not decrypt the private key") from None
        detail = exc.reason or "no certificate with its private key in it"
        raise error(f"{setting}: cannot load a PEM certificate chain and private key ({detail})") from None
