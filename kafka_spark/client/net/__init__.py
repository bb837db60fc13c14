"""The connection core: one broker connection (TCP, TLS, ApiVersions, SASL, pipelined requests), TLS contexts
from the Java client's `ssl.*` properties, retries with backoff, and the readiness probe."""
