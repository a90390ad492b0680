-- Each ring names the reminder's ring before it (`prev_due`), so that a reminder's firings are
-- read newest first without an index by reminder (`LIST_FIRINGS`: a probe a step). An
-- occurrence carries it from whatever scheduled it (the claim of the ring before it, or the
-- API write that started its version, with the last ring it read), in `due`'s key entry, which
-- the load reads alone (INCLUDE); the claim writes it on the ring's row; a ring at a place
-- has no row of `rings`, and its firing carries it. Rows written before are given theirs
-- from the firings' ids, here.
--
-- With the service running: the firings the release before wrote are given theirs by
-- migration 0034's batches, with their key (one pass over the table, where two wrote each row
-- twice); a firing it writes meanwhile is given its own as it is inserted, and its reminder
-- the ring as its last
-- (`rang_due_at`, as migration 0032 gives it: a release before 0015 wrote none, and its
-- claim wrote the firing after the reminder's row), by `firings_ring_before`, a trigger for
-- the sessions that do not write them themselves (this release's say `tocsin.writes_due`),
-- until migration 0036 takes the ids away. The rings and occurrences of a database migrated
-- from before 0021 are none yet.

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
ALTER TABLE due ADD COLUMN prev_due timestamptz;
ALTER TABLE due DROP CONSTRAINT due_pkey;
ALTER TABLE due ADD CONSTRAINT due_pkey
    PRIMARY KEY (lane, rank, bucket, due_at, reminder_id, version) INCLUDE (shard, prev_due);
ALTER TABLE rings ADD COLUMN prev_due timestamptz;
ALTER TABLE firings ADD COLUMN prev_due timestamptz;
CREATE FUNCTION firings_ring_before() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('tocsin.writes_due', true) IS DISTINCT FROM 'on' THEN
        NEW.prev_due := (
            SELECT before.due_at FROM firings AS before
            WHERE before.id > NEW.reminder_id || '.' AND before.id < NEW.id
            ORDER BY before.id DESC
            LIMIT 1
        );
        UPDATE reminders SET rang_due_at = NEW.due_at
        WHERE id = NEW.reminder_id AND (rang_due_at IS NULL OR rang_due_at < NEW.due_at);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER firings_ring_before BEFORE INSERT ON firings
    FOR EACH ROW WHEN (NEW.prev_due IS NULL) EXECUTE FUNCTION firings_ring_before();

UPDATE rings AS g SET prev_due = (
    SELECT f.due_at FROM firings AS f
    WHERE f.id > g.reminder_id || '.'
      AND f.id < g.reminder_id || '.' || floor(extract(epoch FROM g.due_at))::bigint
    ORDER BY f.id DESC
    LIMIT 1
)
WHERE NOT g.taken;
UPDATE due AS d SET prev_due = (
    SELECT f.due_at FROM firings AS f
    WHERE f.id > d.reminder_id || '.'
      AND f.id < d.reminder_id || '.' || floor(extract(epoch FROM d.due_at))::bigint
    ORDER BY f.id DESC
    LIMIT 1
)
WHERE NOT EXISTS (
    SELECT 1 FROM rings AS g
    WHERE (g.due_at, g.reminder_id, g.version) = (d.due_at, d.reminder_id, d.version)
);
