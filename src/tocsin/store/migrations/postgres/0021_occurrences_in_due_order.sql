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
-- next occurrence in `due_at`). The pending ones' occurrences are copied into `due` by
-- migration 0035, in batches of `reminders`' pages while the release before keeps writing
-- (`occurrences_to_copy` says there are some to copy); until then `due` holds nothing, so
-- the migrations between change its shape at no cost. The release before reads
-- `reminders_due`, which goes after the upgrade (0037).
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

CREATE TABLE occurrences_to_copy (since timestamptz NOT NULL);
INSERT INTO occurrences_to_copy VALUES (now());
