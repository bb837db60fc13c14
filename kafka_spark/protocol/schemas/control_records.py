"""Values of the control records KRaft writes into the metadata log and its snapshots.

Each is a flexible message at version 0 whose first field is its own int16 `version`; the record's
key says which one it is (control type 2, 3, 4, 5 or 6).
"""

from kafka_spark.protocol.schema import A, F, Message, S, parse_versions, validate

_VOTER_ID = [F("voter_id", "int32")]

LEADER_CHANGE = Message("LeaderChangeMessage", (
    F("version", "int16"),
    F("leader_id", "int32"),
    A("voters", "0+", _VOTER_ID),
    A("granting_voters", "0+", _VOTER_ID),
), parse_versions("0+"))

SNAPSHOT_HEADER = Message("SnapshotHeaderRecord", (
    F("version", "int16"),
    F("last_contained_log_timestamp", "int64"),
), parse_versions("0+"))

SNAPSHOT_FOOTER = Message("SnapshotFooterRecord", (
    F("version", "int16"),
), parse_versions("0+"))

KRAFT_VERSION = Message("KRaftVersionRecord", (
    F("version", "int16"),
    F("k_raft_version", "int16"),
), parse_versions("0+"))

VOTERS = Message("VotersRecord", (
    F("version", "int16"),
    A("voters", "0+", [
        F("voter_id", "int32"),
        F("voter_directory_id", "uuid"),
        A("endpoints", "0+", [F("name", "string"), F("host", "string"), F("port", "uint16")]),
        S("k_raft_version_feature", "0+", [F("min_supported_version", "int16"), F("max_supported_version", "int16")]),
    ]),
), parse_versions("0+"))

# control type id -> (the name DumpLogSegments prints before the JSON, the message)
BY_TYPE = {
    2: ("LeaderChange:", LEADER_CHANGE),
    3: ("SnapshotHeader", SNAPSHOT_HEADER),
    4: ("SnapshotFooter", SNAPSHOT_FOOTER),
    5: ("KRaftVersion", KRAFT_VERSION),
    6: ("KRaftVoters", VOTERS),
}

for _label, _message in BY_TYPE.values():
    validate(_message.fields, _message.flexible, _message.name)
