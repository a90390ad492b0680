-- `due` is partitioned by month of its occurrences' minute, so that what is decided goes by
-- whole partitions: once every part's watermark is a day past a month and nothing of it is
-- undecided, the month's table is dropped (no row of it written again), where deleting its
-- rows one by one would write each of their pages whole once more, the cost the claim no
-- longer pays (migration 0023). Retention makes the months ahead (this one and the next 12)
-- and drops the months gone by; what falls outside them (far ahead, or before the months
-- made) waits in the default partition `due_outside`, whose decided rows retention deletes
-- row by row, and which a month made later takes its rows from (docs/storage.md, "Months of
-- `due`").
--
-- The occurrences move here in one statement, which holds writes to `due` off while it runs.
-- On a database migrated from before 0021 there are none yet (0035 copies them), and no
-- process of the release before reads or writes `due`.
ALTER TABLE due RENAME TO due_unpartitioned;
ALTER INDEX due_pkey RENAME TO due_unpartitioned_pkey;
ALTER INDEX due_saved RENAME TO due_unpartitioned_saved;

CREATE TABLE due (
    lane smallint NOT NULL,
    rank smallint NOT NULL,
    bucket integer NOT NULL,
    due_at timestamptz NOT NULL,
    reminder_id text COLLATE "C" NOT NULL,
    version integer NOT NULL,
    shard smallint NOT NULL,
    saved_at timestamptz,
    CONSTRAINT due_pkey PRIMARY KEY (lane, rank, bucket, due_at, reminder_id, version)
) PARTITION BY RANGE (bucket);

CREATE INDEX due_saved ON due (lane, rank, saved_at) WHERE saved_at IS NOT NULL;

CREATE TABLE due_outside PARTITION OF due DEFAULT;

INSERT INTO due SELECT lane, rank, bucket, due_at, reminder_id, version, shard, saved_at
FROM due_unpartitioned;

DROP TABLE due_unpartitioned;
