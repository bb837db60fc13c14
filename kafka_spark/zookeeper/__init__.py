"""ZooKeeper support for legacy clusters: broker discovery and offset storage."""
