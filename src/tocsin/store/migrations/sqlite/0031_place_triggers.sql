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
CREATE TABLE place_triggers (
    reminder_id TEXT NOT NULL PRIMARY KEY
        REFERENCES reminders (id) ON DELETE CASCADE,
    place_id TEXT NOT NULL,
    event TEXT NOT NULL CHECK (event IN ('arrive', 'leave')),
    after_minute INTEGER CHECK (after_minute BETWEEN 0 AND 1439),
    before_minute INTEGER CHECK (before_minute BETWEEN 0 AND 1439),
    once TEXT CHECK (once IN ('day', 'ever')),
    rang_at INTEGER,
    rang_day TEXT
) WITHOUT ROWID;
CREATE INDEX place_triggers_place ON place_triggers (place_id, event);
