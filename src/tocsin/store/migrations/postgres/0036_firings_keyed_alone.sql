-- applies: after the upgrade
-- The firings' key is (due_second, reminder_id) alone (migration 0034 built it): the key by
-- id goes, with `firings_due` (the same due order again, which the status board and retention
-- now read from the key) and the `id` column, with the triggers that read it (the one that
-- kept it, and the one that gave a firing the release before wrote its ring before, from
-- the ids: migration 0033). Each of these is
-- a change of the catalogue only (`due_second` is made NOT NULL without reading the table:
-- the constraint 0034 validated proves it), under a lock that waits at most 5 s for the
-- transactions before it (tried again if it timed out: `tocsin migrate` does), but it takes
-- away what the previous release's processes read, so it waits until none runs: `tocsin
-- migrate --before-upgrade` leaves it for the run after them.
SET LOCAL lock_timeout = '5s';
ALTER TABLE firings ALTER COLUMN due_second SET NOT NULL;
ALTER TABLE firings DROP CONSTRAINT firings_due_second_set;
ALTER TABLE firings DROP CONSTRAINT firings_pkey;
ALTER TABLE firings ADD CONSTRAINT firings_pkey PRIMARY KEY USING INDEX firings_key;
DROP INDEX firings_due;
DROP TRIGGER firings_keyed_both ON firings;
DROP TRIGGER IF EXISTS firings_ring_before ON firings;
DROP FUNCTION IF EXISTS firings_ring_before();
DROP FUNCTION firings_keyed_both();
ALTER TABLE firings DROP COLUMN id;
