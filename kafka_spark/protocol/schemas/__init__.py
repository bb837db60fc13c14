"""Every API this package speaks, declared once as data (one module per API)."""

from kafka_spark.protocol.schema import Api
from kafka_spark.protocol.schemas import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    api_versions,
    create_topics,
    delete_topics,
    describe_groups,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_fetch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    sync_group,
    txn_offset_commit,
)

APIS: dict[int, Api] = {
    module.API.key: module.API
    for module in (
        produce,
        fetch,
        list_offsets,
        metadata,
        offset_commit,
        offset_fetch,
        find_coordinator,
        join_group,
        heartbeat,
        leave_group,
        sync_group,
        describe_groups,
        list_groups,
        sasl_handshake,
        api_versions,
        create_topics,
        delete_topics,
        init_producer_id,
        add_partitions_to_txn,
        add_offsets_to_txn,
        end_txn,
        txn_offset_commit,
        sasl_authenticate,
    )
}

__all__ = ["APIS"]
