-- The PostgreSQL migration of the same name keys reminders_due by priority after the lane,
-- so that a part's urgent rows are read apart from its bulk ones; SQLite keys it by the
-- priority's rank first (it has no lanes: one process holds every part).
DROP INDEX reminders_due;
CREATE INDEX reminders_due ON reminders (coalesce(priority, 0), bucket, due_at, id, shard)
    WHERE status = 'pending';
