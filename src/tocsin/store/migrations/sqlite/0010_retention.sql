-- Retention (`Store.prune`, run by `tocsin serve`): rings, finished reminders and
-- idempotency keys older than their age are deleted in small batches, oldest first. Each
-- index below makes a batch a range scan from the old end that stops at the batch's size.
--
-- Rings by due time: `firings_due` (0009, the status board's).
-- Finished reminders by their last change: pending reminders pay nothing for it.
CREATE INDEX reminders_finished ON reminders (updated_at) WHERE status <> 'pending';
-- Idempotency keys by age (kept 24 hours).
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);

-- Chores one worker at a time runs (retention), each under a lease.
CREATE TABLE chores (
    name TEXT PRIMARY KEY,
    holder TEXT,
    expires_at INTEGER
);
