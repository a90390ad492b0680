-- Each ring names the reminder's ring before it (`prev_due`), so that a reminder's firings are
-- read newest first without an index by reminder (`LIST_FIRINGS`: a probe a step). An
-- occurrence carries it from whatever scheduled it (the claim of the ring before it, or the
-- API write that started its version, with the last ring it read), in `due`'s key entry, which
-- the load reads alone (INCLUDE); the claim writes it on the ring's row; a ring at a place
-- has no row of `rings`, and its firing carries it. Rows written before are given theirs
-- from the firings' ids, here.
ALTER TABLE due ADD COLUMN prev_due timestamptz;
ALTER TABLE due DROP CONSTRAINT due_pkey;
ALTER TABLE due ADD CONSTRAINT due_pkey
    PRIMARY KEY (lane, rank, bucket, due_at, reminder_id, version) INCLUDE (shard, prev_due);
ALTER TABLE rings ADD COLUMN prev_due timestamptz;
ALTER TABLE firings ADD COLUMN prev_due timestamptz;

UPDATE rings AS g SET prev_due = (
    SELECT f.due_at FROM firings AS f
    WHERE f.id > g.reminder_id || '.'
      AND f.id < g.reminder_id || '.' || floor(extract(epoch FROM g.due_at))::bigint
    ORDER BY f.id DESC
    LIMIT 1
)
WHERE NOT g.taken;
UPDATE firings AS f SET prev_due = (
    SELECT before.due_at FROM firings AS before
    WHERE before.id > f.reminder_id || '.' AND before.id < f.id
    ORDER BY before.id DESC
    LIMIT 1
);
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
