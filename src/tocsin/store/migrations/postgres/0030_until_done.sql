-- Ringing until done (docs/api.md, "Done, and ringing until done"): a reminder rings again
-- `nag` seconds after each occurrence, at most `nags` times, until a ring of it is marked
-- done (NULL: it rings once); a ring marked done keeps when (`done_at`). Nullable columns:
-- adding them rewrites nothing.
-- With the service running: each table is changed in a step of its own (migration 0016
-- says why), each lock waiting at most 5 s and tried again; the checks are added NOT VALID
-- and validated in a step of their own, with writes going on (0016).

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
ALTER TABLE reminders ADD COLUMN nag integer,
    ADD CONSTRAINT reminders_nag_check CHECK (nag > 0) NOT VALID,
    ADD COLUMN nags smallint,
    ADD CONSTRAINT reminders_nags_check CHECK (nags > 0) NOT VALID;

-- step: in one transaction
SET LOCAL lock_timeout = '5s';
ALTER TABLE firings ADD COLUMN done_at timestamptz;

-- step: in one transaction
ALTER TABLE reminders VALIDATE CONSTRAINT reminders_nag_check;
ALTER TABLE reminders VALIDATE CONSTRAINT reminders_nags_check;
