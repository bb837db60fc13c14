"""KIP-368 timing on a connection: when it re-authenticates and when it stops trusting a session (no broker)."""

from __future__ import annotations

import time

import pytest

from kafka_spark.client.config import ClientConfig
from kafka_spark.client.net.connection import BrokerConnection


@pytest.fixture
def conn() -> BrokerConnection:
    return BrokerConnection("127.0.0.1", 9, ClientConfig({"bootstrap.servers": "127.0.0.1:9"}))


def test_re_authentication_falls_in_java_window_and_the_session_keeps_its_last_percent(conn):
    for _ in range(50):
        before = time.monotonic()
        conn._schedule_reauthentication(4000)
        after = time.monotonic()
        assert conn._reauth_at is not None and conn._session_ends is not None
        assert before + 0.85 * 4 <= conn._reauth_at <= after + 0.95 * 4
        # a margin of 1% (40 ms) at most: the window 85-100% stays open to a request
        assert before + 3.96 <= conn._session_ends <= after + 3.96
        assert conn._reauth_at < conn._session_ends


def test_long_sessions_keep_a_fixed_margin(conn):
    before = time.monotonic()
    conn._schedule_reauthentication(3_600_000)
    assert conn._session_ends is not None and conn._session_ends >= before + 3600 - 0.05


def test_no_lifetime_means_no_re_authentication(conn):
    conn._schedule_reauthentication(4000)
    conn._schedule_reauthentication(0)
    assert conn._reauth_at is None and conn._session_ends is None
    conn._keep_session()  # nothing to do, and no socket needed
