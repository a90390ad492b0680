-- Ringing until done (docs/api.md, "Done, and ringing until done"): a reminder rings again
-- `nag` seconds after each occurrence, at most `nags` times, until a ring of it is marked
-- done (NULL: it rings once); a ring marked done keeps when (`done_at`, microseconds).
ALTER TABLE reminders ADD COLUMN nag INTEGER CHECK (nag > 0);
ALTER TABLE reminders ADD COLUMN nags INTEGER CHECK (nags > 0);
ALTER TABLE firings ADD COLUMN done_at INTEGER;
