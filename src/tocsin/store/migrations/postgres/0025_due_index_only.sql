-- The loads read `due` from its primary key alone (an index-only scan): every column they
-- read of it is in the key, or, `shard`, carried in it (INCLUDE). A minute's entries lie
-- together in the key, in due order, where its rows lie in the heap as they were saved,
-- among everything saved with them: on a table of long standing, reading each row from the
-- heap was a page of its own a ring (docs/benchmarks.md, "The load reads the key alone").
-- A month's heap pages are all-visible once vacuumed, which autovacuum does after a bulk of
-- inserts (autovacuum_vacuum_insert_threshold); a page an API write changed since is read
-- from the heap, as before.
--
-- The key is built again on every month in one statement, which holds writes to `due` off
-- while it runs: on a database migrated from before 0021, a table still empty (0035 fills it).
ALTER TABLE due DROP CONSTRAINT due_pkey;
ALTER TABLE due ADD CONSTRAINT due_pkey
    PRIMARY KEY (lane, rank, bucket, due_at, reminder_id, version) INCLUDE (shard);
