-- As PostgreSQL's 0023: a claim no longer deletes its occurrence's row of `due`; the key of
-- `rings` decides between a claim and an API write that takes the occurrence back (a `taken`
-- row), and the sweep reads what API writes saved lately (`saved_at`, microseconds).
ALTER TABLE rings ADD COLUMN taken INTEGER NOT NULL DEFAULT 0;

ALTER TABLE due ADD COLUMN saved_at INTEGER;

CREATE INDEX due_saved ON due (lane, rank, saved_at) WHERE saved_at IS NOT NULL;

ALTER TABLE leases ADD COLUMN swept_at INTEGER;

UPDATE leases SET swept_at = CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)
WHERE watermark IS NOT NULL;
