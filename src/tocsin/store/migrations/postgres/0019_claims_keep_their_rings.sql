-- A claim keeps what its rings were claimed with, so that recovery needs nothing that may
-- have changed or gone since (docs/architecture.md, "Row writes per ring"):
--
-- `routes` and `freshness`, one element per ring beside `reminder_ids` and `due_ats`: where
-- the ring goes (the firing's `channel`) and its freshness in seconds (its deadline is
-- `due + freshness`). Recovery wrote the ring from the reminder's row as it was then, so an
-- edit of the channel or the freshness after the claim sent the same identity to another
-- channel, after the deadline its first sender had, and a late result of that sender put
-- its destination on the other channel's firing. Nullable: a claim written before this
-- migration, or by a process of the release before, keeps neither, and recovery takes the
-- row's then. Both arrays repeat a few values over a batch and are compressed with the rest
-- of the row: 0.4 B of WAL a ring more (docs/architecture.md).
ALTER TABLE claimed_rings ADD COLUMN routes text[];
ALTER TABLE claimed_rings ADD COLUMN freshness integer[];
--
-- `oldest_due`, the earliest due instant of the claim's rings, and an index on it: retention
-- asks the claims that may still owe a ring before it deletes a reminder. Recovery made the
-- ring from the reminder's row, so a claim left longer than retention keeps (a whole fleet
-- stopped) lost its ring when retention deleted the reminder first: neither sent nor
-- recorded `expired`. A reminder retention deletes rang last before its cutoff, so only the
-- claims with a ring due before it are asked (none, but after an outage). A claim written
-- before this migration, or by a process of the release before, is `-infinity`: always
-- asked. One index entry a claim batch, not a ring (0.08 B of WAL a ring).
ALTER TABLE claimed_rings ADD COLUMN oldest_due timestamptz NOT NULL DEFAULT '-infinity';
CREATE INDEX claimed_rings_oldest ON claimed_rings (oldest_due);
