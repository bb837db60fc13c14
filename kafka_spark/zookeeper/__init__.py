"""ZooKeeper for legacy clusters, through kazoo: broker discovery (`/brokers/...`) and the old consumers'
offset store (`/consumers/<group>/offsets/...`). kazoo is imported only when a session opens."""
