"""Consumer groups: coordinators, committed offsets, listing, describing and lag (admin.py), and a classic group
member (JoinGroup, SyncGroup with the range assignor, Heartbeat, LeaveGroup)."""
