-- A ring no longer rewrites its reminder's row. The occurrences waiting to ring are rows of
-- `due`, keyed in the order the loader reads them (a part's lane, the priority's rank, the
-- minute, the instant): a claim deletes its occurrence's row, and so does an edit, snooze,
-- cancel or rezone that takes the occurrence back (the first of them to delete it wins).
-- Each ring is a row of `rings`, keyed by its due instant first, naming the occurrence after
-- it; a series' next occurrence is a new row of `due`. What a claim inserts lands beside the
-- other rings of its minute. The reminder's row is what its API writes made it: `due_at` the
-- occurrence the last of them scheduled, `status` `pending` or `cancelled`, `version`
-- counting API writes alone. Readers follow a reminder's rings from there
-- (docs/architecture.md, "Rings in due order").
--
-- A reminder rung before this migration keeps what its claims wrote (`fired`, `ended`, its
-- next occurrence in `due_at`); a pending one's occurrence is copied into `due` here, which
-- holds writes to reminders off while it reads every pending row (docs/storage.md,
-- "Changing an index on a live database", says how to run it on a large live database).
CREATE TABLE due (
    lane smallint NOT NULL,
    rank smallint NOT NULL,
    bucket integer NOT NULL,
    due_at timestamptz NOT NULL,
    reminder_id text COLLATE "C" NOT NULL,
    version integer NOT NULL,
    shard smallint NOT NULL,
    CONSTRAINT due_pkey PRIMARY KEY (lane, rank, bucket, due_at, reminder_id, version)
);

CREATE TABLE rings (
    due_at timestamptz NOT NULL,
    reminder_id text COLLATE "C" NOT NULL,
    version integer NOT NULL,
    repeat boolean NOT NULL,
    next_due timestamptz,
    CONSTRAINT rings_pkey PRIMARY KEY (due_at, reminder_id, version)
);

INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard)
SELECT shard / 64, coalesce(priority, 0), bucket, due_at, id, version, shard
FROM reminders
WHERE status = 'pending';

DROP INDEX reminders_due;
