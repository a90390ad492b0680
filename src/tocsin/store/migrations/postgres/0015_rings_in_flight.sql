-- A ring is written twice: the claim's update of its reminder, and its firing, once, with the
-- outcome of its first try (docs/architecture.md, "Row writes per ring"). Until then the
-- rings a claim handed to its sender are kept here, one row per claim batch (a thousand rings
-- at a time in a busy second: a few bytes a ring, not a row): which reminders, at which due
-- instants, held by which sender until when. A sender that stops, or cannot write its
-- results before `hold_until`, leaves its claims here; `recover_claims` then writes their
-- unwritten rings `queued`, for any sender, under the same identity, and forgets the claim.
-- Nothing else reads this table, and no key is needed: rows are found by their hold.
-- The release before keeps writing `reminders` while this runs: its lock waits at most 5 s
-- for the transactions before it, and `tocsin migrate` tries it again.
SET LOCAL lock_timeout = '5s';
CREATE TABLE claimed_rings (
    hold_until timestamptz NOT NULL,
    sender text NOT NULL,
    reminder_ids text[] NOT NULL,
    due_ats timestamptz[] NOT NULL
);
CREATE INDEX claimed_rings_hold ON claimed_rings (hold_until);

-- The due instant of a reminder's latest ring, set by the claim in the update it makes
-- anyway: the API shows a ring still on its way (its firing not written yet) as the
-- reminder's last firing, `sending`. Nullable without a default: adding it rewrites nothing.
ALTER TABLE reminders ADD COLUMN rang_due_at timestamptz;
