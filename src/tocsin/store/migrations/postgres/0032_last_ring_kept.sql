-- Readers find a reminder's newest ring from the latest instants of its version's timeline
-- (`tocsin.store.looking`), no longer from the newest of its firings by id: what rang before
-- the version is the row's `rang_due_at`, which each API write that starts a version now
-- keeps as the last ring it read (it kept only a ring on its way before). Here every
-- reminder whose newest firing is no ring of its version gets it, unless its pending
-- occurrences are still to copy (`occurrences_to_copy`, a database migrated from before
-- 0021): then migration 0035 gives it with their copy, in batches, while the release before
-- keeps writing.
CREATE TABLE IF NOT EXISTS occurrences_to_copy (since timestamptz NOT NULL);
UPDATE reminders AS r SET rang_due_at = newest.due_at
FROM (
    SELECT DISTINCT ON (reminder_id) reminder_id, due_at FROM firings
    ORDER BY reminder_id, id DESC
) AS newest
WHERE newest.reminder_id = r.id AND newest.due_at > coalesce(r.rang_due_at, '-infinity')
  AND NOT EXISTS (
      SELECT 1 FROM rings AS g
      WHERE (g.due_at, g.reminder_id, g.version) = (newest.due_at, r.id, r.version)
  )
  AND NOT EXISTS (SELECT 1 FROM occurrences_to_copy);
