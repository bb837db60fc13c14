"""Errors raised by the client on top of the package's exception tree."""

from __future__ import annotations

from collections.abc import Sequence

from kafka_spark.errors import DataLossError, KafkaConnectionError, KafkaSparkError


class RetriesExhaustedError(KafkaSparkError):
    """A retriable failure persisted past the configured retries or deadline.

    `last_error` is the final underlying failure, `attempts` how many tries were made.
    """

    def __init__(self, what: str, attempts: int, elapsed: float, last_error: BaseException | None) -> None:
        self.what = what
        self.attempts = attempts
        self.elapsed = elapsed
        self.last_error = last_error
        cause = f"{type(last_error).__name__}: {last_error}" if last_error else "no response"
        super().__init__(
            f"{what}: gave up after {attempts} attempts in {elapsed:.1f}s; last error {cause}. "
            "The cluster kept answering with a retriable error (leader moving, broker down, throttling); "
            "check broker health or raise retries / delivery.timeout.ms / default.api.timeout.ms."
        )


class BootstrapUnreachableError(RetriesExhaustedError):
    """No bootstrap broker ever took a connection from this client (refused, unknown host, timed out, not a
    Kafka listener): the cluster is not reachable from here, which is said within
    `socket.connection.setup.timeout.max.ms` (`window_ms`) instead of being retried like a cluster in trouble.
    `servers` are the bootstrap servers tried.
    """

    def __init__(self, what: str, attempts: int, elapsed: float, last_error: BaseException | None,
                 servers: Sequence[str] = (), window_ms: int | None = None) -> None:
        self.what = what
        self.attempts = attempts
        self.elapsed = elapsed
        self.last_error = last_error
        self.servers = tuple(servers)
        self.window_ms = window_ms
        window = f"={window_ms}" if window_ms is not None else ""
        KafkaSparkError.__init__(
            self,
            f"{what}: never connected to any bootstrap broker: tried {', '.join(self.servers) or 'none'} for "
            f"{elapsed:.1f}s ({attempts} attempts); last error: {last_error}. Check bootstrap.servers (host and "
            "port), that the brokers are up and listening there, and that this host can reach them (DNS, "
            f"firewall). A cluster never reached is tried for socket.connection.setup.timeout.max.ms{window}, "
            "one reached before for default.api.timeout.ms.")

    def __reduce__(self) -> tuple:
        return (type(self), (self.what, self.attempts, self.elapsed, self.last_error, self.servers, self.window_ms))


class RequestTimeoutError(KafkaConnectionError):
    """A broker did not answer within `request.timeout.ms`."""


class ConnectionClosedError(KafkaConnectionError):
    """The broker closed the connection (restart, idle timeout, or it rejected the request)."""


class NoBrokersAvailableError(KafkaConnectionError):
    """None of the bootstrap or known brokers accepted a connection."""


class UnknownTopicError(KafkaSparkError):
    """A topic or partition that the cluster does not have."""


class TopicNotReadyError(KafkaSparkError):
    """A topic's partitions had no elected leader within the time given."""


class FetchTimeoutError(KafkaSparkError):
    """The requested offsets did not become available before the fetch deadline."""


class OffsetOutOfRangeDataLoss(DataLossError):
    """Offsets of a requested range were deleted (retention) or the log was truncated.

    `topic`, `partition`, the requested `offset`, and the broker's current `log_start_offset` /
    `high_watermark` say what is missing.
    """

    def __init__(self, topic: str, partition: int, offset: int, log_start_offset: int, high_watermark: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.high_watermark = high_watermark
        super().__init__(
            f"{topic}-{partition}: offset {offset} is no longer available (log start {log_start_offset}, "
            f"high watermark {high_watermark}); the records were deleted by retention or the log was "
            "truncated. Set failOnDataLoss=false (fail_on_data_loss=False) to skip the missing offsets."
        )


class ProducerError(KafkaSparkError):
    """A record could not be delivered."""


class TransactionError(ProducerError):
    """A transaction could not be begun, extended or ended; `transactional_id` names it."""

    def __init__(self, transactional_id: str, message: str) -> None:
        self.transactional_id = transactional_id
        super().__init__(f"transactional id {transactional_id!r}: {message}")

    def __reduce__(self) -> tuple:
        return (type(self), (self.transactional_id, str(self).split(": ", 1)[1]))


class TransactionFencedError(TransactionError):
    """A newer producer initialised the same transactional id (PRODUCER_FENCED / INVALID_PRODUCER_EPOCH): this
    producer's transaction was aborted and it may not write again."""
