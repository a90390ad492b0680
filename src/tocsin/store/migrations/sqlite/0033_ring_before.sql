-- Each ring names the reminder's ring before it (`prev_due`), as on PostgreSQL (its
-- migration of the same number says why): an occurrence carries it from whatever scheduled
-- it, the claim writes it on the ring's row, and a ring at a place on its firing. Rows written
-- before are given theirs from the firings' ids, here.
ALTER TABLE due ADD COLUMN prev_due INTEGER;
ALTER TABLE rings ADD COLUMN prev_due INTEGER;
ALTER TABLE firings ADD COLUMN prev_due INTEGER;

UPDATE rings SET prev_due = (
    SELECT f.due_at FROM firings AS f
    WHERE f.id > rings.reminder_id || '.'
      AND f.id < rings.reminder_id || '.' || (rings.due_at / 1000000)
    ORDER BY f.id DESC
    LIMIT 1
)
WHERE NOT taken;
UPDATE firings SET prev_due = (
    SELECT before.due_at FROM firings AS before
    WHERE before.id > firings.reminder_id || '.' AND before.id < firings.id
    ORDER BY before.id DESC
    LIMIT 1
);
UPDATE due SET prev_due = (
    SELECT f.due_at FROM firings AS f
    WHERE f.id > due.reminder_id || '.'
      AND f.id < due.reminder_id || '.' || (due.due_at / 1000000)
    ORDER BY f.id DESC
    LIMIT 1
)
WHERE NOT EXISTS (
    SELECT 1 FROM rings AS g
    WHERE (g.due_at, g.reminder_id, g.version) = (due.due_at, due.reminder_id, due.version)
);
