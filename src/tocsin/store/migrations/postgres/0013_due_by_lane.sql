-- Each scheduler part reads only its own pending reminders. Keyed (bucket, due_at, id, shard),
-- reminders_due kept a part's rows interleaved with every other part's: the shard range was
-- tested on each index entry but could not narrow the scan, so with 16 parts each part walked
-- every entry of a busy minute (a 200,000-reminder minute: ~2,500 index pages per part's
-- load, 16 times over). The index now leads with the shard's lane, `shard / 64` (one of 16
-- contiguous ranges of the 1,024 shards, tocsin.ids.LANES): a part is a lane with the
-- default 16 parts, a slice of one with more, a run of whole lanes with fewer. Within a
-- lane the entries stay in reading order (bucket, due_at, id), so a page is one range scan
-- that starts after the previous page's last row and stops at the page's size; a part of
-- several lanes merges one such scan per lane. `shard` last, as before: a part narrower than
-- a lane tests its range on the index entry.
--
-- Built here, the index holds writes to reminders off while it is built. On a large live
-- database build it first with CREATE INDEX CONCURRENTLY as `reminders_due_by_lane`
-- (docs/storage.md, "Changing an index on a live database"): this migration then only drops
-- the old index and renames the new one.
DROP INDEX reminders_due;
ALTER INDEX IF EXISTS reminders_due_by_lane RENAME TO reminders_due;
CREATE INDEX IF NOT EXISTS reminders_due ON reminders ((shard / 64), bucket, due_at, id, shard)
    WHERE status = 'pending';
