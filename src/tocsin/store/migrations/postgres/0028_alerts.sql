-- Early alerts (docs/api.md, "Early alerts"): the leads before each occurrence at which a
-- reminder rings as well, as `1d,15m`, earliest first; NULL for none (adding the column
-- rewrites nothing, and a reminder without alerts stores a bit of its null bitmap).
-- The release before keeps writing `reminders` while this runs: its lock waits at most 5 s
-- for the transactions before it, and `tocsin migrate` tries it again.
SET LOCAL lock_timeout = '5s';
ALTER TABLE reminders ADD COLUMN alerts text;
