-- Urgent rows are read apart from bulk ones: reminders_due is keyed by the priority's rank
-- (urgent 0, bulk 1: `coalesce(priority, 0)`) right after the lane, so each part has two
-- loaders, each reading only its own priority's rows in reading order (bucket, due_at, id).
-- Keyed as before, an urgent row due a few seconds after 50,000 bulk rows of its minute was
-- not read until the bulk rows before it had been claimed (the part's memory was full of
-- them): 11.6 s late through the running service. Reads of every priority (the status
-- board's counts, the oldest pending row) take one range scan per lane and rank.
--
-- With the service running: the new index is built CONCURRENTLY under another name (writes
-- go on; a build stopped half way, which leaves an invalid index, is dropped and made again
-- when the run goes on), then takes the old one's place, a change of the catalogue only.
-- Until the workers of the release before stop, their reads have no index in their order.

-- step: outside a transaction
DROP INDEX CONCURRENTLY IF EXISTS reminders_due_by_priority;
CREATE INDEX CONCURRENTLY reminders_due_by_priority
    ON reminders ((shard / 64), (coalesce(priority, 0)), bucket, due_at, id, shard)
    WHERE status = 'pending';

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
DROP INDEX reminders_due;
ALTER INDEX reminders_due_by_priority RENAME TO reminders_due;
