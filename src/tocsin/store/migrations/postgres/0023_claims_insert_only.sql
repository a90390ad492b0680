-- A claim no longer deletes its occurrence's row of `due`: on a table of long standing that
-- row lies among whatever else was saved the day it was, and its delete wrote that page whole
-- after each checkpoint (9.4 KB of WAL a ring when 1 in 100 of `due` rang in one second). The
-- occurrence's key in `rings` decides instead: the claim inserts its ring, and an edit,
-- snooze, cancel or rezone that takes the occurrence back inserts a `taken` row under the same
-- key (and deletes its row of `due`, the API's cost). Of the two, the first to insert wins
-- (docs/architecture.md, "Rings in due order").
--
-- The occurrences a claim decided stay in `due` until their minute is behind every part's
-- watermark, and the loader passes them by (an anti-join to `rings`). So the sweep no longer
-- reads a part's oldest pending rows: it reads the occurrences API writes saved lately
-- (`saved_at`, by the database's clock, in the partial index `due_saved`), from the time of
-- the part's last sweep (`leases.swept_at`) less a margin.
-- The release before keeps writing `leases` while this runs: its lock waits at most 5 s for
-- the transactions before it, and `tocsin migrate` tries it again.
SET LOCAL lock_timeout = '5s';
ALTER TABLE rings ADD COLUMN taken boolean NOT NULL DEFAULT false;

ALTER TABLE due ADD COLUMN saved_at timestamptz;

CREATE INDEX due_saved ON due (lane, rank, saved_at) WHERE saved_at IS NOT NULL;

ALTER TABLE leases ADD COLUMN swept_at timestamptz;

UPDATE leases SET swept_at = clock_timestamp() WHERE watermark IS NOT NULL;
