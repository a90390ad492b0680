-- The scheduler reads a part's pending reminders in due order, a page at a time. Keyed
-- (bucket, shard), the index handed it every pending row of the part's shards in the
-- bucket, which it then fetched from the heap and sorted for each page: 0.8 s a page for a
-- minute holding 1,000,000 reminders. Keyed in reading order, a page is a range scan that
-- starts after the previous page's last row and stops at the page's size; the part's shard
-- range is tested on the index entry (`shard` is its last column), so rows of other parts
-- are skipped without touching the heap.
DROP INDEX reminders_due;
CREATE INDEX reminders_due ON reminders (bucket, due_at, id, shard) WHERE status = 'pending';
