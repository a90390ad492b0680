-- A reminder that rings through its owner's quiet hours (docs/api.md, "Quiet hours"): 1, or
-- NULL for one that waits like any other bulk ring. Read only when quiet hours would hold
-- one of its rings.
ALTER TABLE reminders ADD COLUMN ignore_quiet INTEGER CHECK (ignore_quiet = 1);
