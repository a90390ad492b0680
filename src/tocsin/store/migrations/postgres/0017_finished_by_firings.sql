-- A reminder its ring finished (a fired one-off, a series its last ring ended) keeps that
-- ring's due instant in `due_at` (the claim) and is deleted by retention with its ring's
-- record, the firing, instead of by its last change: a ring no longer writes an entry into
-- reminders_finished (one WAL record and ~70 bytes of a ring's ~1,010, docs/benchmarks.md).
-- The index keeps what else leaves a reminder not pending, with `due_at` NULL: a cancel, an
-- edit. Rows that finished before this migration have `due_at` NULL, so they are in it and
-- retention deletes them as before.
--
-- Built here, the index holds writes to reminders off while it is built (it reads the whole
-- table). On a large live database build it first with CREATE INDEX CONCURRENTLY as
-- `reminders_finished_without_due` (docs/storage.md, "Changing an index on a live database"):
-- this migration then only drops the old index and renames the new one.
DROP INDEX reminders_finished;
ALTER INDEX IF EXISTS reminders_finished_without_due RENAME TO reminders_finished;
CREATE INDEX IF NOT EXISTS reminders_finished ON reminders (updated_at)
    WHERE status <> 'pending' AND due_at IS NULL;
