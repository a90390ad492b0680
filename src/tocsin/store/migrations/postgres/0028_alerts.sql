-- Early alerts (docs/api.md, "Early alerts"): the leads before each occurrence at which a
-- reminder rings as well, as `1d,15m`, earliest first; NULL for none (adding the column
-- rewrites nothing, and a reminder without alerts stores a bit of its null bitmap).
ALTER TABLE reminders ADD COLUMN alerts text;
