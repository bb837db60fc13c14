"""Small local HTTP(S) endpoints that answer JSON, for the token services of tests (OAuth token endpoints,
an Entra-like authority): a handler base and a server started on a free port of 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import ssl
import threading
import urllib.parse
from pathlib import Path


class JsonHandler(http.server.BaseHTTPRequestHandler):
    """A request handler that reads forms, answers JSON and logs nothing."""

    def form(self) -> dict[str, str]:
        """The posted form, one value per field."""
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        return {k: v[0] for k, v in urllib.parse.parse_qs(body).items()}

    def answer(self, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def serve(handler: type[JsonHandler], tls: tuple[Path, Path] | None = None) -> tuple[http.server.HTTPServer, str]:
    """Start `handler` on 127.0.0.1 (over TLS with `(certificate, key)`); the server and its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
