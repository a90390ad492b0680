-- A reminder its ring finished (a fired one-off, a series its last ring ended) keeps that
-- ring's due instant in `due_at` (the claim) and is deleted by retention with its ring's
-- record, the firing, instead of by its last change: a ring no longer writes an entry into
-- reminders_finished. The index keeps what else leaves a reminder not pending, with `due_at`
-- NULL: a cancel, an edit. Rows that finished before this migration have `due_at` NULL, so
-- they are in it and retention deletes them as before.
DROP INDEX reminders_finished;
CREATE INDEX reminders_finished ON reminders (updated_at)
    WHERE status <> 'pending' AND due_at IS NULL;
