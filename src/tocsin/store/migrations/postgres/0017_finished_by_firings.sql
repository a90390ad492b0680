-- A reminder its ring finished (a fired one-off, a series its last ring ended) keeps that
-- ring's due instant in `due_at` (the claim) and is deleted by retention with its ring's
-- record, the firing, instead of by its last change: a ring no longer writes an entry into
-- reminders_finished (one WAL record and ~70 bytes of a ring's ~1,010, docs/benchmarks.md).
-- The index keeps what else leaves a reminder not pending, with `due_at` NULL: a cancel, an
-- edit. Rows that finished before this migration have `due_at` NULL, so they are in it and
-- retention deletes them as before.
--
-- With the service running: the new index is built CONCURRENTLY under another name (writes
-- go on; a build stopped half way, which leaves an invalid index, is dropped and made again
-- when the run goes on), then takes the old one's place, a change of the catalogue only.

-- step: outside a transaction
DROP INDEX CONCURRENTLY IF EXISTS reminders_finished_without_due;
CREATE INDEX CONCURRENTLY reminders_finished_without_due ON reminders (updated_at)
    WHERE status <> 'pending' AND due_at IS NULL;

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
DROP INDEX reminders_finished;
ALTER INDEX reminders_finished_without_due RENAME TO reminders_finished;
