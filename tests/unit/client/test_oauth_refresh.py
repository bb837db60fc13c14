"""When a login token is refreshed: Java's `ExpiringCredentialRefreshingLogin` rules (research §2), branch by
branch, and what the shared token source does when a refresh fails."""

from __future__ import annotations

import pytest

from kafka_spark.client.auth.oauth import tokens
from kafka_spark.client.auth.oauth.tokens import RefreshingToken, RefreshRules, Token, refresh_time
from kafka_spark.errors import AuthenticationError

DEFAULTS = RefreshRules()  # factor 0.8, jitter 0.05, min period 60 s, buffer 300 s
HOUR = 3600.0


def token(issued: float, expires: float) -> Token:
    return Token("h.p.s", expires_at=expires, issued_at=issued)


def test_expired_token_is_retried_in_ten_seconds():
    assert refresh_time(token(0, 100), DEFAULTS, now=101, draw=0.5) == 111


def test_short_token_refreshes_within_its_window_ignoring_the_buffers():
    # now + 60 + 300 > exp: buffers ignored, at factor + jitter * draw of what is left
    assert refresh_time(token(0, 100), DEFAULTS, now=0, draw=0.0) == pytest.approx(80)
    assert refresh_time(token(0, 100), DEFAULTS, now=0, draw=1.0) == pytest.approx(85)
    assert refresh_time(token(0, 100), DEFAULTS, now=50, draw=0.0) == pytest.approx(90)


def test_one_hour_token_refreshes_at_its_window():
    # proposed = 48-51 minutes, before the buffer limit (55 minutes) and after the minimum period
    assert refresh_time(token(0, HOUR), DEFAULTS, now=0, draw=0.0) == pytest.approx(0.80 * HOUR)
    assert refresh_time(token(0, HOUR), DEFAULTS, now=0, draw=0.999) == pytest.approx(0.84995 * HOUR)


def test_buffer_caps_a_late_window():
    rules = RefreshRules(window_factor=1.0, window_jitter=0.0)
    assert refresh_time(token(0, HOUR), rules, now=0, draw=0.5) == HOUR - 300


def test_minimum_period_delays_an_early_window():
    # a token issued long ago whose window has passed: no sooner than min period from now
    assert refresh_time(token(-10 * HOUR, HOUR), DEFAULTS, now=0, draw=0.0) == pytest.approx(60)


def test_refresh_uses_issue_time_not_fetch_time():
    # issued 20 minutes before it was fetched: the window counts from iat
    assert refresh_time(token(-1200, 2400), DEFAULTS, now=0, draw=0.0) == pytest.approx(-1200 + 0.8 * 3600)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(tokens.time, "time", c)
    monkeypatch.setattr(tokens.random, "random", lambda: 0.0)
    return c


def test_token_is_shared_until_its_refresh_time(clock):
    made: list[Token] = []

    def fetch() -> Token:
        made.append(token(clock.now, clock.now + 100))
        return made[-1]

    source = RefreshingToken(fetch, DEFAULTS, "test login")
    first = source.current()
    clock.now += 79
    assert source.current() is first and source.fetches == 1
    clock.now += 2  # past 80% of the lifetime
    assert source.current() is not first and source.fetches == 2


def test_failed_refresh_keeps_the_valid_token_and_retries_in_ten_seconds(clock):
    answers: list[object] = [token(clock.now, clock.now + 100), AuthenticationError("endpoint down")]

    def fetch() -> Token:
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        assert isinstance(answer, Token)
        return answer

    source = RefreshingToken(fetch, DEFAULTS, "test login")
    first = source.current()
    clock.now += 81
    assert source.current() is first  # refresh failed, old token still valid
    clock.now += 5
    assert source.current() is first  # no new attempt within 10 s
    clock.now += 15  # the old token has expired now
    with pytest.raises(AuthenticationError, match=r"^test login: endpoint down$"):
        source.current()


def test_a_token_that_arrives_expired_is_refused(clock):
    source = RefreshingToken(lambda: token(0, clock.now - 1), DEFAULTS, "OAUTHBEARER login (OIDC)")
    with pytest.raises(AuthenticationError, match=r"OAUTHBEARER login \(OIDC\): the new token has already expired"):
        source.current()


def test_shared_source_is_keyed_by_digest_so_no_secret_is_kept_as_a_key():
    made = tokens.shared({"sasl.jaas.config": "clientSecret=s3cr3t-value"},
                         lambda: RefreshingToken(lambda: token(0, 1), DEFAULTS, "x"))
    again = tokens.shared({"sasl.jaas.config": "clientSecret=s3cr3t-value"},
                          lambda: RefreshingToken(lambda: token(0, 1), DEFAULTS, "y"))
    assert made is again
    assert not any("s3cr3t" in key for key in tokens._SHARED)
