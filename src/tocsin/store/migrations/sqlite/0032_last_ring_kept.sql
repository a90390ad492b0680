-- Readers find a reminder's newest ring from the latest instants of its version's timeline
-- (`tocsin.store.looking`), no longer from the newest of its firings by id: what rang before
-- the version is the row's `rang_due_at` (as on PostgreSQL), the last ring each API write
-- that starts a version read. Here every reminder whose newest firing is no ring of its
-- version gets it.
ALTER TABLE reminders ADD COLUMN rang_due_at INTEGER;
UPDATE reminders SET rang_due_at = (
    SELECT f.due_at FROM firings AS f
    WHERE f.id > reminders.id || '.' AND f.id < reminders.id || '/'
    ORDER BY f.id DESC LIMIT 1
)
WHERE EXISTS (
    SELECT 1 FROM firings AS f
    WHERE f.id > reminders.id || '.' AND f.id < reminders.id || '/'
      AND NOT EXISTS (
          SELECT 1 FROM rings AS g
          WHERE (g.due_at, g.reminder_id, g.version) = (f.due_at, reminders.id, reminders.version)
      )
      AND f.id = (
          SELECT max(newest.id) FROM firings AS newest
          WHERE newest.id > reminders.id || '.' AND newest.id < reminders.id || '/'
      )
);
