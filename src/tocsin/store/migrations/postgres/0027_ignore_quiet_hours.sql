-- A reminder that rings through its owner's quiet hours (docs/api.md, "Quiet hours"): true,
-- or NULL for one that waits like any other bulk ring. Read only when quiet hours would hold
-- one of its rings; NULL stores nothing but a bit of the row's null bitmap, and adding the
-- column rewrites nothing.
-- The check is added NOT VALID and validated in a step of its own, with writes going on
-- (migration 0016 says why).

-- step: in one transaction
-- The release before keeps writing `reminders` while this runs: its lock waits at most 5 s
-- for the transactions before it, and `tocsin migrate` tries it again.
SET LOCAL lock_timeout = '5s';
ALTER TABLE reminders ADD COLUMN ignore_quiet boolean,
    ADD CONSTRAINT reminders_ignore_quiet_check CHECK (ignore_quiet) NOT VALID;

-- step: in one transaction
ALTER TABLE reminders VALIDATE CONSTRAINT reminders_ignore_quiet_check;
