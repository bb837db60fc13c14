"""The broker error-code table and the exception classes generated from it."""

from __future__ import annotations

import pickle

import pytest

import kafka_spark.errors as errors
from kafka_spark.errors import (
    ERROR_CLASSES,
    ERROR_CODES,
    AuthenticationError,
    BrokerError,
    KafkaSparkError,
    RetriableBrokerError,
    UnknownBrokerError,
    UnsupportedVersionError,
    error_class,
    error_for_code,
    raise_for_code,
)
from kafka_spark.errors.codes import class_name

NEWEST_CODE = 133


def test_table_is_complete_and_contiguous() -> None:
    assert sorted(ERROR_CODES) == list(range(-1, NEWEST_CODE + 1))
    assert len({row.name for row in ERROR_CODES.values()}) == len(ERROR_CODES)
    for code, row in ERROR_CODES.items():
        assert row.code == code and row.message


def test_every_error_code_has_its_class() -> None:
    assert set(ERROR_CLASSES) == set(ERROR_CODES) - {0}
    for code, cls in ERROR_CLASSES.items():
        assert issubclass(cls, BrokerError) and issubclass(cls, KafkaSparkError)
        assert cls.code == code and cls.error_name == ERROR_CODES[code].name
        assert issubclass(cls, RetriableBrokerError) == ERROR_CODES[code].retriable == cls.retriable
        error = error_for_code(code, "ctx")
        assert type(error) is cls and error.code == code and "ctx" in str(error)
        assert getattr(errors, cls.__name__) is cls


@pytest.mark.parametrize(
    ("code", "name", "retriable"),
    [
        (-1, "UNKNOWN_SERVER_ERROR", False),
        (1, "OFFSET_OUT_OF_RANGE", False),
        (2, "CORRUPT_MESSAGE", True),
        (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
        (5, "LEADER_NOT_AVAILABLE", True),
        (6, "NOT_LEADER_OR_FOLLOWER", True),
        (7, "REQUEST_TIMED_OUT", True),
        (14, "COORDINATOR_LOAD_IN_PROGRESS", True),
        (15, "COORDINATOR_NOT_AVAILABLE", True),
        (16, "NOT_COORDINATOR", True),
        (22, "ILLEGAL_GENERATION", False),
        (25, "UNKNOWN_MEMBER_ID", False),
        (27, "REBALANCE_IN_PROGRESS", False),
        (29, "TOPIC_AUTHORIZATION_FAILED", False),
        (35, "UNSUPPORTED_VERSION", False),
        (58, "SASL_AUTHENTICATION_FAILED", False),
        (74, "FENCED_LEADER_EPOCH", True),
        (75, "UNKNOWN_LEADER_EPOCH", True),
        (78, "OFFSET_NOT_AVAILABLE", True),
        (100, "UNKNOWN_TOPIC_ID", True),
        (129, "REBOOTSTRAP_REQUIRED", False),
        (133, "SHARE_SESSION_LIMIT_REACHED", True),
    ],
)
def test_known_codes(code: int, name: str, retriable: bool) -> None:
    assert ERROR_CODES[code].name == name
    error = error_for_code(code)
    assert error.retriable is retriable
    assert isinstance(error, RetriableBrokerError) is retriable


def test_class_names() -> None:
    assert class_name("NOT_LEADER_OR_FOLLOWER") == "NotLeaderOrFollowerError"
    assert class_name("UNKNOWN_SERVER_ERROR") == "UnknownServerError"
    assert class_name("INVALID_TOPIC_EXCEPTION") == "InvalidTopicError"
    assert error_class(6) is errors.NotLeaderOrFollowerError
    assert error_class(3).__name__ == "UnknownTopicOrPartitionError"


def test_sasl_and_version_errors_join_the_broader_tree() -> None:
    assert isinstance(error_for_code(58), AuthenticationError)
    assert isinstance(error_for_code(33), AuthenticationError)
    unsupported = error_for_code(35)
    assert isinstance(unsupported, UnsupportedVersionError) and isinstance(unsupported, BrokerError)
    assert type(unsupported).__name__ == "BrokerUnsupportedVersionError"


def test_no_error_and_unknown_codes() -> None:
    assert error_for_code(0) is None
    raise_for_code(0)
    unknown = error_for_code(30000, "topic t")
    assert isinstance(unknown, UnknownBrokerError) and unknown.code == 30000 and not unknown.retriable
    with pytest.raises(errors.NotLeaderOrFollowerError):
        raise_for_code(6, "t-0")


def test_errors_pickle() -> None:
    # errors cross process boundaries in Spark tasks
    error = error_for_code(6, "topic t partition 0")
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is type(error) and str(clone) == str(error)
    unknown = pickle.loads(pickle.dumps(error_for_code(999, "x")))
    assert unknown.code == 999 and str(unknown) == str(error_for_code(999, "x"))
