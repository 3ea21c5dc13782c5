"""Where the two databases part: the connection (db), what PostgreSQL and SQLite spell
differently (dialect), the event table's partitions, and reads sent to a replica (replica)."""
