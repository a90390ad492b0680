-- Urgent rows are read apart from bulk ones: reminders_due is keyed by the priority's rank
-- (urgent 0, bulk 1: `coalesce(priority, 0)`) right after the lane, so each part has two
-- loaders, each reading only its own priority's rows in reading order (bucket, due_at, id).
-- Keyed as before, an urgent row due a few seconds after 50,000 bulk rows of its minute was
-- not read until the bulk rows before it had been claimed (the part's memory was full of
-- them): 11.6 s late through the running service. Reads of every priority (the status
-- board's counts, the oldest pending row) take one range scan per lane and rank.
--
-- Built here, the index holds writes to reminders off while it is built (it reads every
-- pending row). On a large live database build it first with CREATE INDEX CONCURRENTLY as
-- `reminders_due_by_priority` (docs/storage.md, "Changing an index on a live database"):
-- this migration then only drops the old index and renames the new one.
DROP INDEX reminders_due;
ALTER INDEX IF EXISTS reminders_due_by_priority RENAME TO reminders_due;
CREATE INDEX IF NOT EXISTS reminders_due
    ON reminders ((shard / 64), (coalesce(priority, 0)), bucket, due_at, id, shard)
    WHERE status = 'pending';
