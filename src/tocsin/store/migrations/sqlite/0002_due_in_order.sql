-- The scheduler reads a part's pending reminders in due order, a page at a time: keyed in
-- that order, a page is a range scan that starts after the previous page's last row and
-- stops at the page's size, instead of a sort of every pending row of the bucket (see the
-- PostgreSQL migration of the same name). `shard` last: a part's range is tested on the
-- index entry.
DROP INDEX reminders_due;
CREATE INDEX reminders_due ON reminders (bucket, due_at, id, shard) WHERE status = 'pending';
