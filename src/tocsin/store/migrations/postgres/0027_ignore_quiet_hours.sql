-- A reminder that rings through its owner's quiet hours (docs/api.md, "Quiet hours"): true,
-- or NULL for one that waits like any other bulk ring. Read only when quiet hours would hold
-- one of its rings; NULL stores nothing but a bit of the row's null bitmap, and adding the
-- column rewrites nothing.
ALTER TABLE reminders ADD COLUMN ignore_quiet boolean CHECK (ignore_quiet);
