-- Reminders that ring at a place ("when I get home") instead of at a time: one row for each
-- such reminder, written in its create's or edit's transaction (a timed reminder has none,
-- so its create and its claim are as they were). `event` is `arrive` or `leave`; the local
-- window [after_minute, before_minute) is read in the reminder's zone (NULL: from or to
-- midnight; both NULL: no window); `once` is `day`, `ever` or NULL. `rang_at` is the
-- device's time of the crossing that rang it last and `rang_day` that ring's local day
-- (YYYY-MM-DD): the conditional update of this row decides whether a crossing rings
-- (docs/architecture.md, "Rings at a place"). Read by place when a device reports a
-- crossing there. It goes with its reminder (retention deletes a cancelled one): a probe of
-- this table's primary key for each reminder deleted.
-- The release before keeps writing `reminders` (the foreign key) while this runs: its lock
-- waits at most 5 s for the transactions before it, and `tocsin migrate` tries it again.
SET LOCAL lock_timeout = '5s';
CREATE TABLE place_triggers (
    reminder_id text COLLATE "C" NOT NULL PRIMARY KEY
        REFERENCES reminders (id) ON DELETE CASCADE,
    place_id text COLLATE "C" NOT NULL,
    event text NOT NULL CHECK (event IN ('arrive', 'leave')),
    after_minute smallint CHECK (after_minute BETWEEN 0 AND 1439),
    before_minute smallint CHECK (before_minute BETWEEN 0 AND 1439),
    once text CHECK (once IN ('day', 'ever')),
    rang_at timestamptz,
    rang_day text COLLATE "C"
);
CREATE INDEX place_triggers_place ON place_triggers (place_id, event);

-- A place reminder's row waits at LATEST (6000-01-01T00:00Z, bucket 2119574880), where no
-- loader reads: its occurrence lives in a partition of `due` of its own, not in the default
-- one, which each month that retention makes is scanned for its rows (migration 0024);
-- place reminders there would make every month's ATTACH read them all. Its name is no
-- month's (`due_YYYY_MM`), so retention neither makes nor drops it.
CREATE TABLE due_never (LIKE due INCLUDING DEFAULTS INCLUDING INDEXES);
ALTER TABLE due_never ADD CONSTRAINT due_never_bucket CHECK (bucket >= 2119574880);
WITH moved AS (
    DELETE FROM due_outside WHERE bucket >= 2119574880 RETURNING *
)
INSERT INTO due_never SELECT * FROM moved;
ALTER TABLE due ATTACH PARTITION due_never FOR VALUES FROM (2119574880) TO (MAXVALUE);
ALTER TABLE due_never DROP CONSTRAINT due_never_bucket;
