"""Record decoder benchmark: kafka_spark.records.decode_to_arrow against kafka-python's reader.

Both read the same bytes in the same run: v2 record batches as a Java producer with default
settings would write them (batch.size 16 KiB), split into fetch-response-sized chunks. Ours turns
each chunk into an Arrow RecordBatch with Spark's Kafka schema; kafka-python iterates
MemoryRecords and touches every record's offset, timestamp, key and value.

    .venv/bin/python bench/decode_bench.py            # 1,000,000 records per case
    .venv/bin/python bench/decode_bench.py --quick    # 100,000 records, one repetition

Prints a Markdown table; MB/s counts the bytes as fetched (compressed where compressed).
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import time
from collections.abc import Callable, Iterator

import numpy as np

from kafka_spark.records import Decoder, encode_batch

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
BASE_TS = 1_700_000_000_000


def make_values(n: int, size: int, seed: int) -> list[bytes]:
    """Values that compress like JSON logs: field names repeat, contents are random letters."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
    body = alphabet[rng.integers(0, len(alphabet), size=n * size)].tobytes()
    out = []
    for i in range(n):
        head = b'{"id":%d,"user":"u%d","msg":"' % (i, i % 997)
        chunk = body[i * size : (i + 1) * size]
        out.append((head + chunk)[: size - 2] + b'"}')
    return out


def make_batches(n: int, value_size: int, codec: str, batch_bytes: int, keys: bool) -> list[bytes]:
    """Encoded batches of about `batch_bytes` uncompressed, with consecutive offsets."""
    values = make_values(n, value_size, seed=value_size)
    per_batch = max(1, batch_bytes // (value_size + 16))
    batches = []
    for first in range(0, n, per_batch):
        count = min(per_batch, n - first)
        records = [
            (b"key-%d" % ((first + i) % 10_000) if keys else None, values[first + i], (), BASE_TS + first + i)
            for i in range(count)
        ]
        batches.append(encode_batch(records, compression=codec, base_offset=first))
    return batches


def fetch_chunks(batches: list[bytes], fetch_bytes: int) -> list[bytes]:
    """Group whole batches into chunks of at most `fetch_bytes`, like fetch responses."""
    chunks, current, size = [], [], 0
    for batch in batches:
        if current and size + len(batch) > fetch_bytes:
            chunks.append(b"".join(current))
            current, size = [], 0
        current.append(batch)
        size += len(batch)
    if current:
        chunks.append(b"".join(current))
    return chunks


class Feed:
    """Fetch responses as a client sees them: each lands in a reused receive buffer (as a socket
    read would put it there, warm in cache) before it is decoded; with `cold`, decoders read the
    pre-built chunks straight from memory instead. Only decoding is timed."""

    def __init__(self, chunks: list[bytes], cold: bool) -> None:
        self.chunks = chunks
        self.cold = cold
        self.buffer = bytearray(max(len(c) for c in chunks))

    def __iter__(self) -> Iterator[memoryview | bytes]:
        view = memoryview(self.buffer)
        for chunk in self.chunks:
            if self.cold:
                yield chunk
            else:
                view[: len(chunk)] = chunk
                yield view[: len(chunk)]


def decode_ours(decoder: Decoder, chunk: memoryview | bytes) -> int:
    result = decoder.decode(chunk, "bench-topic", 0)
    return result.batch.num_rows


def decode_kafka_python(chunk: memoryview | bytes) -> int:
    from kafka.record.memory_records import MemoryRecords

    rows = 0
    records = MemoryRecords(chunk)
    while records.has_next():
        for record in records.next_batch():
            _ = (record.offset, record.timestamp, record.key, record.value)
            rows += 1
    return rows


def measure(feed: Feed, expect: int, repeat: int, peer_repeat: int, clock: Callable[[], float]) -> tuple[float, float]:
    """Best total time of ours and of kafka-python over `feed`.

    The two alternate chunk by chunk, so that a busy machine slows both alike.
    """
    decoder = Decoder()
    for chunk in Feed(feed.chunks[:2], feed.cold):  # warm up: imports, allocator pools, codec contexts
        decode_ours(decoder, chunk)
        decode_kafka_python(chunk)
    ours, peer = float("inf"), float("inf")
    for rep in range(max(repeat, peer_repeat)):
        gc.collect()
        spent = [0.0, 0.0]
        rows = [0, 0]
        for chunk in feed:
            if rep < repeat:
                start = clock()
                rows[0] += decode_ours(decoder, chunk)
                spent[0] += clock() - start
            if rep < peer_repeat:
                start = clock()
                rows[1] += decode_kafka_python(chunk)
                spent[1] += clock() - start
        if rep < repeat:
            ours = min(ours, spent[0])
        if rep < peer_repeat:
            peer = min(peer, spent[1])
        if rows[0] not in (0, expect) or rows[1] not in (0, expect):
            raise SystemExit(f"read {rows} records, expected {expect}")
    return ours, peer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100,000 records, one repetition")
    parser.add_argument("--sizes", default="100,1000", help="value sizes in bytes")
    parser.add_argument("--codecs", default=",".join(CODECS))
    parser.add_argument("--batch-bytes", type=int, default=16 * 1024, help="uncompressed batch size")
    parser.add_argument("--fetch-bytes", type=int, default=4 << 20, help="bytes per decode call")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of our decoder (best counts)")
    parser.add_argument("--peer-repeat", type=int, default=1, help="repetitions of kafka-python")
    parser.add_argument("--no-keys", action="store_true", help="null keys instead of ~8-byte keys")
    parser.add_argument("--cold", action="store_true", help="decode chunks from memory, not a fresh receive buffer")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time, or this process's CPU time (steadier on a shared machine)")
    args = parser.parse_args(argv)
    n = 100_000 if args.quick else args.records
    repeat = 1 if args.quick else args.repeat
    clock = time.perf_counter if args.clock == "wall" else time.process_time

    source = "pre-built chunks" if args.cold else "a receive buffer"
    print(f"{n:,} records per case, batches of ~{args.batch_bytes // 1024} KiB, decoded "
          f"{args.fetch_bytes / (1 << 20):g} MiB at a time from {source}; {args.clock} clock; "
          f"Python {platform.python_version()}, {platform.machine()}\n")
    print("| value | codec | MB fetched | ours rec/s | ours MB/s | kafka-python rec/s | ratio |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        for codec in args.codecs.split(","):
            chunks = fetch_chunks(make_batches(n, size, codec, args.batch_bytes, not args.no_keys), args.fetch_bytes)
            feed = Feed(chunks, args.cold)
            wire = sum(len(c) for c in chunks)
            ours, peer = measure(feed, n, repeat, args.peer_repeat, clock)
            print(f"| {size} B | {codec} | {wire / 1e6:.0f} | {n / ours / 1e6:.2f} M | {wire / ours / 1e6:.0f} | "
                  f"{n / peer / 1e6:.3f} M | {peer / ours:.1f}x |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
