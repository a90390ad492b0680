-- `firings_open` finds a reminder's firings still on their way (queued or being sent: the
-- few a retry or the in-app feed holds), which retention asks about before a reminder goes
-- with its last ring's firing, as on PostgreSQL (0034 there, which also keys `firings` in due
-- order; here the key stays the id: a SQLite database is one process's, and its pages are
-- not shipped to a standby). Its predicate is a CASE, as there.
CREATE INDEX firings_open ON firings (reminder_id)
    WHERE CASE WHEN state IN ('queued', 'sending') THEN true END;
