-- Urgent rings ahead of bulk ones (digests, newsletters): a reminder's priority, copied onto
-- each of its firings when it rings, and an app's, for the reminders it saves without one.
-- NULL is urgent, the default, and 1 is bulk (`Priority.rank`): an urgent row stores nothing
-- but a bit of its null bitmap, so a ring costs no byte more than before, and adding the
-- columns rewrites nothing.
-- With the service running: each table is changed in a step of its own, so that no step
-- holds one table's lock while it waits for another's (a claim of the release before writes
-- `reminders` and `firings` in one transaction: the two orders deadlocked). Each lock waits
-- at most 5 s for the transactions before it, and `tocsin migrate` tries it again. The
-- checks are added NOT VALID and validated in a step of their own: added with the columns,
-- each would read its whole table with every write to it held off (a new column's values are
-- all NULL, but PostgreSQL reads them to prove it); validated, they are read with writes going
-- on.

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
ALTER TABLE reminders ADD COLUMN priority smallint,
    ADD CONSTRAINT reminders_priority_check CHECK (priority = 1) NOT VALID;

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
ALTER TABLE firings ADD COLUMN priority smallint,
    ADD CONSTRAINT firings_priority_check CHECK (priority = 1) NOT VALID;

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
ALTER TABLE apps ADD COLUMN priority smallint,
    ADD CONSTRAINT apps_priority_check CHECK (priority = 1) NOT VALID;

-- step: in one transaction
ALTER TABLE reminders VALIDATE CONSTRAINT reminders_priority_check;

-- step: in one transaction
ALTER TABLE firings VALIDATE CONSTRAINT firings_priority_check;

-- step: in one transaction
ALTER TABLE apps VALIDATE CONSTRAINT apps_priority_check;
