-- Retention (`Store.prune`, run by one worker at a time): rings, finished reminders and
-- idempotency keys older than their age are deleted in small batches, oldest first. Each
-- index below makes a batch a range scan from the old end that stops at the batch's size.
--
-- Rings by due time: `firings_due` (0009, the status board's). Firings are inserted at their
-- due time, so that index grows at its right end and retention trims its left end.
-- Finished reminders by their last change: only rows that are no longer pending enter it,
-- so the pending reminders (the billion the schema is sized for) pay nothing for it.
CREATE INDEX reminders_finished ON reminders (updated_at) WHERE status <> 'pending';
-- Idempotency keys by age (kept 24 hours).
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);

-- Chores that one worker at a time runs (retention), each under a lease judged by the
-- database's clock, like the scheduler parts' leases.
CREATE TABLE chores (
    expires_at timestamptz,
    name text NOT NULL PRIMARY KEY,
    holder text
);

-- The churn tables are vacuumed by the fraction of dead rows they hold: PostgreSQL's default
-- (20% of the table, plus 50 rows) means waiting for hundreds of millions of dead firings
-- at the scale Tocsin is sized for. These tables are vacuumed when 1-2% of their rows are
-- dead or newly inserted, so space freed by retention and by delivery's updates is reused
-- before the table grows (docs/storage.md: vacuum and bloat).
ALTER TABLE firings SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);
ALTER TABLE attempts SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_insert_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);
ALTER TABLE reminders SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02
);
ALTER TABLE idempotency_keys SET (autovacuum_vacuum_scale_factor = 0.05);
