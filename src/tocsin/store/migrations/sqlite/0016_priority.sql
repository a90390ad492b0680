-- Urgent rings ahead of bulk ones (digests, newsletters): a reminder's priority, copied onto
-- each of its firings when it rings, and an app's, for the reminders it saves without one.
-- NULL is urgent, the default, and 1 is bulk (`Priority.rank`): an urgent row stores nothing
-- but a bit of its null bitmap, so a ring costs no byte more than before, and adding the
-- columns rewrites nothing.
ALTER TABLE reminders ADD COLUMN priority INTEGER CHECK (priority = 1);
ALTER TABLE firings ADD COLUMN priority INTEGER CHECK (priority = 1);
ALTER TABLE apps ADD COLUMN priority INTEGER CHECK (priority = 1);
