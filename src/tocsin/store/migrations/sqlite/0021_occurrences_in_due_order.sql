-- The layout of the PostgreSQL migration of the same name, which says why: a ring no longer
-- rewrites its reminder's row. The occurrences waiting to ring are rows of `due`, keyed in
-- the order the loader reads them (the shard's lane, the priority's rank, the minute, the
-- instant), deleted by the claim that rings one or by the edit, snooze, cancel or rezone
-- that takes it back, whichever comes first; each ring is a row of `rings`, keyed by its
-- due instant first, naming the occurrence after it, which waits in `due` in its turn. The
-- reminder's row is what its API writes made it (`version` counts them alone). Readers
-- follow a reminder's rings from there (docs/architecture.md, "Rings in due order").
--
-- Both are WITHOUT ROWID: each row is its key and a column or two, so the key's B-tree holds
-- the rows themselves, and a ring writes one B-tree where a rowid table writes two.
--
-- A reminder rung before this migration keeps what its claims wrote (`fired`, `ended`, its
-- next occurrence in `due_at`); a pending one's occurrence is copied into `due` here. The
-- loader, the claim and the status board read `due` from now on, so the partial index of
-- pending reminders they read goes.
CREATE TABLE due (
    lane INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    reminder_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    shard INTEGER NOT NULL,
    PRIMARY KEY (lane, rank, bucket, due_at, reminder_id, version)
) WITHOUT ROWID;

CREATE TABLE rings (
    due_at INTEGER NOT NULL,
    reminder_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    next_due INTEGER,
    PRIMARY KEY (due_at, reminder_id, version)
) WITHOUT ROWID;

INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard)
SELECT shard / 64, coalesce(priority, 0), bucket, due_at, id, version, shard
FROM reminders
WHERE status = 'pending';

DROP INDEX reminders_due;
