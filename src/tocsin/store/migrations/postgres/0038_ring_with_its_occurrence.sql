-- An occurrence holds what its ring says, where it goes and when its reminder rings next
-- (`ring`: one JSON object, `_RING_CONTENT`), written with it by the API write or the claim
-- that schedules it, so that a minute's load reads only the minute's pages instead of each
-- ring's reminder where it lies (a leaf of `reminders_pkey` and a heap page a ring, in a
-- minute among a hundred times as many reminders: 22 µs of the database's CPU a ring, 7
-- with the occurrence's own; docs/benchmarks.md, "What a ring says, with its occurrence").
-- A column without a default: a change of the catalogue alone, which every month takes with
-- it. The occurrences waiting already have none; the load reads their reminder's row for
-- them, as before. The release before writes `due` by named columns and reads no `ring`, so
-- this applies before the upgrade.

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
ALTER TABLE due ADD COLUMN ring text;
