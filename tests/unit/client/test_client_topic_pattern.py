"""Topic selection by pattern follows Spark's subscribePattern: a regex search, internal topics left out."""

from __future__ import annotations

from kafka_spark.client.metadata import ClusterMetadata, TopicInfo


def metadata(*names: str, internal: tuple[str, ...] = ("__consumer_offsets",)) -> ClusterMetadata:
    md = ClusterMetadata()
    for n in names:
        md.topics[n] = TopicInfo(n)
    for n in internal:
        md.topics[n] = TopicInfo(n, is_internal=True)
    return md


def test_pattern_is_found_anywhere_in_the_name_like_sparks_find_first_in():
    md = metadata("orders", "orders-dlq", "eu.orders", "payments")
    assert md.matching("orders") == ["eu.orders", "orders", "orders-dlq"]
    assert md.matching("^orders$") == ["orders"]
    assert md.matching("dlq|pay") == ["orders-dlq", "payments"]


def test_internal_topics_only_on_request():
    md = metadata("offsets-audit")
    assert md.matching("offsets") == ["offsets-audit"]
    assert md.matching("offsets", include_internal=True) == ["__consumer_offsets", "offsets-audit"]
