-- -- migrations -------------------------------------------------------------------------------

-- name: CREATE_SCHEMA_MIGRATIONS
-- The runner's own bookkeeping table, made before any migration runs.
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at INTEGER NOT NULL
)

-- name: HAS_SCHEMA_MIGRATIONS
-- Whether the bookkeeping table exists at all (a database never migrated).
SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'

-- name: RECORD_MIGRATION
-- Record one applied migration.
INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)

-- -- reminders --------------------------------------------------------------------------------

-- name: INSERT_REMINDER
-- Insert one reminder (run with executemany for a batch).
INSERT INTO reminders (
    id, owner, shard, text, channel, zone, anchor, rule, at, repeat, status, due_at, bucket,
    freshness, metadata, source, snoozed_from, version, created_at, updated_at, priority,
    ignore_quiet, alerts, nag, nags
) VALUES (
    :id, :owner, :shard, :text, :channel, :zone, :anchor, :rule, :at, :repeat, :status,
    :due_at, :bucket, :freshness, :metadata, :source, :snoozed_from, :version, :created_at,
    :updated_at, :priority, :ignore_quiet, :alerts, :nag, :nags
)

-- name: INSERT_IDEMPOTENCY
-- Save the idempotency record of a request; the primary key (scope, key) refuses a second.
INSERT INTO idempotency_keys (scope, key, request_hash, status_code, body, created_at)
VALUES (?, ?, ?, ?, ?, ?)

-- name: INSERT_DUE
-- The occurrence a reminder's row names waits to ring, while the row is pending: a row of
-- `due` keyed by the lane and priority rank of the reminder, its minute and instant, and the
-- row's version. Run after each write that saves a row (:id) with a new occurrence: a
-- create, a snooze's new one-off, an edit, a rezone. :saved_at (the host's clock, which
-- the sweep reads by) puts it in `due_saved`, where the sweep finds it. The ring before it is
-- the last the write read (`rang_due_at`), as PostgreSQL's writes name it.
INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard, saved_at, prev_due)
SELECT shard / 64, coalesce(priority, 0), bucket, due_at, id, version, shard, :saved_at,
    rang_due_at
FROM reminders
WHERE id = :id AND status = 'pending'

-- name: PENDING_COUNT
-- How many pending reminders an owner keeps from one app (NULL: the owner himself), among at
-- most :limit of the owner's rows read by reminders_owner. A row counts as pending as on
-- PostgreSQL (its _WAITING says why a series counts while its row says so): its status says
-- so and, for a one-off, its ring was not claimed (a probe of the key of `rings`).
SELECT count(*) FILTER (
    WHERE mine.source IS :source AND mine.status = 'pending' AND (
        mine.rule IS NOT NULL OR mine.alerts IS NOT NULL OR mine.nag IS NOT NULL OR NOT EXISTS (
            SELECT 1 FROM rings AS g
            WHERE (g.due_at, g.reminder_id, g.version) = (mine.due_at, mine.id, mine.version)
        )
    )
)
FROM (
    SELECT id, version, due_at, rule, alerts, nag, status, source FROM reminders
    WHERE owner = :owner LIMIT :limit
) AS mine

-- Reminders as they are now, worked out from their rings as PostgreSQL's _RING_STATE does
-- (it says how; the reads are the same): a claim leaves the reminder's row as its last API
-- write made it, and each ring of that version is a row of `rings` naming the occurrence
-- after it. The reader is told where to look (`tocsin.store.looking`): :starts, a JSON object
-- of the latest instants of each version's timeline by reminder id, of which the newest that
-- rang is where the walk starts (else the occurrence the write scheduled); it follows
-- `next_due` through `rings` (a probe of its key a step) to the last ring of the version,
-- the one whose next occurrence has no ring. Each row of `reminders` comes with:
-- - `now_status`: the row's own status when it is not `pending` (cancelled; `fired` or
--   `ended` as claims of an earlier release wrote them); else `pending` while an occurrence
--   waits, `fired` (a one-off) or `ended` (a series) after the last ring;
-- - `now_due`: the occurrence that waits, if any;
-- - `last_id`, `last_due_at`, `last_state`: the last ring: the newest of the version's last
--   ring, the last ring of the versions before (`rang_due_at`, kept by the API write that
--   ended them) and the last a place rang, with its firing (a probe of the firings' key); a
--   ring whose firing is not there is shown `sending` (the version's own last ring always;
--   one of before until its deadline, judged at :now; SQLite's claim writes the firing of
--   each ring it rings, so only retention leaves one out);
-- - `last_rung`: the due instant of the version's last ring;
-- - `lost`: no ring of the version was found (`looking` says when it asks again).
-- SQLite has no LATERAL join: the state is one JSON value worked out from `r` and handed to
-- json_each, whose argument may name the tables before it and is evaluated once a row (a
-- scalar subquery in the select list would be copied into each column that reads it, the
-- walk with it). A template: `queries` fills it in where a statement reads
-- {reminders_now}; a statement's conditions on the reminder's own columns are tested
-- before the walk.

-- name: _REMINDERS_NOW
SELECT r.*, now.value ->> 'now_status' AS now_status, now.value ->> 'now_due' AS now_due,
    now.value ->> 'last_id' AS last_id, now.value ->> 'last_due_at' AS last_due_at,
    now.value ->> 'last_state' AS last_state, now.value ->> 'last_rung' AS last_rung,
    now.value ->> 'lost' AS lost
FROM reminders AS r
CROSS JOIN json_each((
    WITH RECURSIVE newest AS (
        SELECT max(s.value) AS at FROM json_each(:starts, '$."' || r.id || '"') AS s
        WHERE r.status = 'pending' AND EXISTS (
            SELECT 1 FROM rings AS g
            WHERE (g.due_at, g.reminder_id, g.version) = (s.value, r.id, r.version)
        )
    ), chain (due_at, repeat, next_due) AS (
        SELECT g.due_at, g.repeat, g.next_due FROM rings AS g
        WHERE (g.due_at, g.reminder_id, g.version)
            = (coalesce((SELECT at FROM newest), r.due_at), r.id, r.version)
          AND r.status = 'pending'
        UNION ALL
        SELECT g.due_at, g.repeat, g.next_due
        FROM chain JOIN rings AS g
            ON (g.due_at, g.reminder_id, g.version) = (chain.next_due, r.id, r.version)
    ), rung AS (
        SELECT due_at, repeat, next_due FROM chain
        WHERE next_due IS NULL OR NOT EXISTS (
            SELECT 1 FROM rings AS g
            WHERE (g.due_at, g.reminder_id, g.version) = (chain.next_due, r.id, r.version)
        )
    ), shown AS (
        SELECT max(coalesce(rung.due_at, -1), coalesce(r.rang_due_at, -1), coalesce((
            SELECT t.rang_at FROM place_triggers AS t WHERE t.reminder_id = r.id
        ), -1)) AS at
        FROM (SELECT 1) LEFT JOIN rung ON true
    ), last AS (
        SELECT rung.due_at AS rung_due, rung.next_due, written.id, written.due_at,
            written.state, nullif(shown.at, -1) AS shown_at,
            coalesce(written.id IS NULL AND shown.at >= 0 AND (
                (shown.at = rung.due_at AND NOT rung.repeat)
                OR shown.at + r.freshness * 1000000 > :now), false) AS claimed
        FROM shown LEFT JOIN rung ON true
        LEFT JOIN firings AS written ON written.id = r.id || '.' || (shown.at / 1000000)
    )
    SELECT json_array(json_object(
        'now_status', CASE
            WHEN r.status <> 'pending' OR rung_due IS NULL OR next_due IS NOT NULL
                THEN r.status
            WHEN r.rule IS NULL THEN 'fired'
            ELSE 'ended'
        END,
        'now_due', CASE
            WHEN r.status <> 'pending' THEN NULL
            WHEN rung_due IS NULL THEN r.due_at
            ELSE next_due
        END,
        'last_id', CASE WHEN claimed THEN r.id || '.' || (shown_at / 1000000) ELSE id END,
        'last_due_at', CASE WHEN claimed THEN shown_at ELSE due_at END,
        'last_state', CASE WHEN claimed THEN 'sending' ELSE state END,
        'last_rung', rung_due,
        'lost', json(CASE WHEN r.status = 'pending' AND rung_due IS NULL
            AND (SELECT at FROM newest) IS NULL THEN 'true' ELSE 'false' END)
    ))
    FROM last
)) AS now

-- name: GET_REMINDER
-- One reminder's row as its last API write left it (`reminders_now` then works out what its
-- rings say).
SELECT * FROM reminders WHERE id = :id

-- name: LIST_REMINDERS
-- An owner's reminders after a given id, in id order (index reminders_owner), saved by one
-- app when :source, as their rows are: those that may be of status :status as they are now
-- (a row that is not pending is as it says; a pending one may have rung its last since), all
-- when NULL.
SELECT * FROM reminders
WHERE owner = :owner AND id > :after_id AND (:source IS NULL OR source = :source)
  AND (:status IS NULL OR status = :status OR status = 'pending')
ORDER BY id
LIMIT :limit

-- name: REMINDERS_NOW
-- The reminders :ids (a JSON array) as they are now (`_REMINDERS_NOW`), looked for from
-- :starts, judged at :now.
SELECT * FROM ({reminders_now}) WHERE id IN (SELECT value FROM json_each(:ids))

-- name: TAKE_BACK
-- Take back the occurrence that waits to ring at :waiting (minute :waiting_bucket) for
-- reminder :id at version :version, as PostgreSQL's _TAKE_BACK does: a `taken` row of
-- `rings` under the occurrence's key, while its row of `due` is there (found by its key: the
-- lane and priority rank of the reminder's row). A claim inserts its ring under the same
-- key (INSERT_RINGS), each in a write transaction of its own: whichever comes first wins,
-- and the row count says whether this one did (an edit, cancel or rezone that lost to a
-- claim changes nothing). Then TAKEN_BACK deletes the row of `due`.
INSERT INTO rings (due_at, reminder_id, version, repeat, next_due, taken)
SELECT :waiting, r.id, r.version, 0, NULL, 1
FROM reminders AS r
WHERE r.id = :id AND r.version = :version AND EXISTS (
    SELECT 1 FROM due AS d
    WHERE (d.lane, d.rank, d.bucket, d.due_at, d.reminder_id, d.version)
        = (r.shard / 64, coalesce(r.priority, 0), :waiting_bucket, :waiting, r.id, r.version)
)
ON CONFLICT DO NOTHING

-- name: TAKEN_BACK
-- The row of `due` of an occurrence TAKE_BACK took back (the API write's cost: tidying
-- leaves an undecided occurrence alone, and this one is decided).
DELETE FROM due
WHERE (lane, rank, bucket, due_at, reminder_id, version) = (
    SELECT shard / 64, coalesce(priority, 0), :waiting_bucket, :waiting, id, version
    FROM reminders
    WHERE id = :id AND version = :version
)

-- name: UPDATE_REMINDER
-- Replace a reminder's mutable fields while its version is the expected one (after
-- TAKE_BACK took its occurrence back, when one waited as the caller read it), keeping its
-- last ring as the caller read it (:rang) for readers, as PostgreSQL's does.
UPDATE reminders
SET text = :text, channel = :channel, zone = :zone, anchor = :anchor, rule = :rule, at = :at,
    repeat = :repeat, status = :status, due_at = :due_at, bucket = :bucket,
    freshness = :freshness, metadata = :metadata, version = :expected_version + 1,
    updated_at = :updated_at, priority = :priority, ignore_quiet = :ignore_quiet,
    alerts = :alerts, nag = :nag, nags = :nags,
    rang_due_at = max(coalesce(:rang, rang_due_at), coalesce(rang_due_at, :rang))
WHERE id = :id AND version = :expected_version

-- name: CANCEL_REMINDER
-- Cancel a reminder at version :version, whose occurrence TAKE_BACK just took back, keeping
-- its last ring as read (:rang, as UPDATE_REMINDER).
UPDATE reminders
SET status = 'cancelled', due_at = NULL, bucket = NULL, version = version + 1,
    updated_at = :now,
    rang_due_at = max(coalesce(:rang, rang_due_at), coalesce(rang_due_at, :rang))
WHERE id = :id AND version = :version AND status = 'pending'

-- name: MARK_SNOOZED
-- Mark a firing snoozed by a new one-off, once, and say by which (PostgreSQL's statement of
-- the same name says why in one statement): the new one-off when this marked it, the other
-- one when it was snoozed already, no row when the firing does not exist.
UPDATE firings SET snoozed_by = coalesce(snoozed_by, ?) WHERE id = ? RETURNING snoozed_by

-- -- firings ------------------------------------------------------------------------------------

-- name: MARK_DONE
-- Mark a firing done at :now, once (a second mark keeps the first's instant); the firing.
UPDATE firings SET done_at = coalesce(done_at, :now) WHERE id = :id RETURNING *

-- name: LIST_FIRINGS
-- A reminder's (:rid) firings, newest due first, :limit at most: from its last ring (:last,
-- as a reader shows it), each ring to the one before it, a probe of the key of `rings` (or,
-- for a ring at a place, of the firings') a step ({before}: `_RING_BEFORE`), as PostgreSQL's
-- statement of the same name.
WITH RECURSIVE walk (at, step) AS (
    SELECT :last, 1
    UNION ALL
    SELECT {before}, walk.step + 1
    FROM walk
    WHERE {before} < walk.at AND walk.step < 4 * :limit
)
SELECT f.* FROM walk
JOIN firings AS f ON f.id = :rid || '.' || (walk.at / 1000000)
ORDER BY walk.step
LIMIT :limit

-- name: _RING_BEFORE
-- {before} of LIST_FIRINGS: the ring before the one at `walk.at` (SQLite's recursive step
-- may not read its table in a subquery of its FROM, so the step's value and its condition
-- each read it).
coalesce(
    (SELECT max(g.prev_due) FROM rings AS g
     WHERE g.due_at = walk.at AND g.reminder_id = :rid AND NOT g.taken),
    (SELECT f.prev_due FROM firings AS f WHERE f.id = :rid || '.' || (walk.at / 1000000))
)

-- name: LIST_ATTEMPTS
-- The attempts of several firings (ids given as a JSON array).
SELECT * FROM attempts
WHERE firing_id IN (SELECT value FROM json_each(?))
ORDER BY firing_id, number

-- -- contacts ---------------------------------------------------------------------------------

-- name: LIST_CONTACTS
-- One page of an owner's contacts in id order (keyset: those after :after), of one kind when
-- :kind, saved by one app when :source.
SELECT * FROM contacts
WHERE owner = :owner AND id > :after AND (:kind IS NULL OR kind = :kind)
  AND (:source IS NULL OR source = :source)
ORDER BY id LIMIT :limit

-- name: COUNT_CONTACTS
-- How many contacts of an owner one app saved (NULL: the owner himself), counted up to :limit.
SELECT count(*) FROM (
    SELECT 1 FROM contacts WHERE owner = :owner AND source IS :source LIMIT :limit
)

-- name: LIST_PLACES
-- One page of an owner's places in id order (keyset: those after :after), saved by one app
-- when :source: a range of places_owner.
SELECT * FROM places
WHERE owner = :owner AND id > :after AND (:source IS NULL OR source = :source)
ORDER BY id LIMIT :limit

-- name: COUNT_PLACES
-- How many places of an owner one app saved (NULL: the owner himself), counted up to :limit.
SELECT count(*) FROM (
    SELECT 1 FROM places WHERE owner = :owner AND source IS :source LIMIT :limit
)

-- name: PLACE_TRIGGERS_OF
-- The place triggers of the reminders :ids (a JSON array), a probe of the primary key each.
SELECT * FROM place_triggers WHERE reminder_id IN (SELECT value FROM json_each(:ids))

-- name: HOLD_PENDING
-- Whether a reminder that a crossing rings is pending at its version, read in the crossing's
-- write transaction (one writer: no edit or cancel comes between it and the ring), with the
-- ring before this one (`prev`: the trigger's last, or the last of the versions before).
SELECT max(coalesce(rang_due_at, -1), coalesce((
    SELECT t.rang_at FROM place_triggers AS t WHERE t.reminder_id = r.id
), -1)) AS prev
FROM reminders AS r WHERE id = :id AND version = :version AND status = 'pending'

-- name: MARK_PLACE_RING
-- Decide that a crossing rings a reminder, once: note it on the trigger, only while the
-- trigger is still of that place and event and has not rung for it — never for `once`
-- `ever`, not on the crossing's local day (:day, YYYY-MM-DD) for `day`, and not since
-- :flap_since (the crossing's time less the flap window), which also passes over a crossing
-- older than the last one that rang. Two takers of one crossing update the same row: the
-- second waits for the first and then finds it rung. Answers the reminder's id when it rings.
UPDATE place_triggers
SET rang_at = :at, rang_day = :day
WHERE reminder_id = :reminder_id AND place_id = :place_id AND event = :event
  AND (rang_at IS NULL OR (
      coalesce(once, '') <> 'ever' AND rang_at <= :flap_since
      AND (once IS NULL OR rang_day < :day)))
RETURNING reminder_id, once

-- name: INSERT_PLACE_RING
-- A crossing's ring of a reminder, handed to the delivery queue as a firing `queued` for any
-- sender now (pickup takes it, as it takes a retry), under the identity
-- `<reminder id>.<the crossing's second>`; its words, channel and app are the reminder's
-- row's, at the version MARK_PLACE_RING's transaction holds. One written already (the same
-- crossing taken again) keeps what it holds.
INSERT INTO firings (
    id, reminder_id, owner, shard, due_at, deadline, channel, text, metadata, source, state,
    attempts, next_attempt_at, created_at, priority, prev_due
)
SELECT :id, r.id, r.owner, r.shard, :due_at, :deadline, r.channel, r.text, r.metadata,
    r.source, 'queued', 0, :now, :now, r.priority, nullif(:prev, -1)
FROM reminders AS r WHERE r.id = :reminder_id
ON CONFLICT (id) DO NOTHING
RETURNING id

-- name: HOLD_LISTS
-- The lists of a JSON array of ids that are there, read in a reminder's save's write
-- transaction (one writer: no delete of the list comes between it and the save).
SELECT id FROM lists WHERE id IN (SELECT value FROM json_each(?))

-- name: PLACE_DUE_GONE
-- A `once: ever` reminder whose one ring a crossing just wrote (INSERT_PLACE_RING, in the
-- same write transaction) waits no more: its occurrence at LATEST goes (a row of `due` that
-- nothing loads, deleted as TAKEN_BACK deletes one). Then FIRED_AT_PLACE.
DELETE FROM due
WHERE (lane, rank, bucket, due_at, reminder_id, version) = (
    SELECT shard / 64, coalesce(priority, 0), bucket, due_at, id, version
    FROM reminders
    WHERE id = :reminder_id AND status = 'pending'
)

-- name: FIRED_AT_PLACE
-- The row of a `once: ever` reminder that rang its one ring (PLACE_DUE_GONE): `fired` at a new
-- version, as a one-off whose ring went, so readers show it so, a cancel is refused (it
-- rang), an edit read before loses (412), and a later crossing finds it not pending.
UPDATE reminders
SET status = 'fired', due_at = NULL, bucket = NULL, version = version + 1, updated_at = :now
WHERE id = :reminder_id AND status = 'pending'

-- name: DESTINATIONS
-- Where rings go: the enabled contacts of many (owner, kind) pairs (a JSON array of pairs),
-- each pair an index lookup of contacts_owner_kind.
SELECT c.* FROM json_each(?) AS wanted
CROSS JOIN contacts AS c
WHERE c.owner = json_extract(wanted.value, '$[0]') AND c.kind = json_extract(wanted.value, '$[1]')
  AND c.disabled_reason IS NULL
ORDER BY c.id

-- name: LIST_RINGS
-- Whom rings of many list reminders go to now (a JSON array of [reminder id, list id]): the
-- joined members of each one's list, or its assignee alone when it has one and he joined.
SELECT json_extract(w.value, '$[0]') AS reminder_id, m.member
FROM json_each(?) AS w
LEFT JOIN list_assignees AS a ON a.reminder_id = json_extract(w.value, '$[0]')
JOIN list_members AS m ON m.list_id = json_extract(w.value, '$[1]')
  AND m.joined_at IS NOT NULL AND (a.assignee IS NULL OR m.member = a.assignee)
ORDER BY 1, m.member

-- name: ASSIGNEES_OF
-- The assignees of many reminders (a JSON array), those with one.
SELECT a.* FROM json_each(?) AS w
CROSS JOIN list_assignees AS a
WHERE a.reminder_id = w.value

-- name: QUIET_HOURS_OF
-- The quiet hours of many owners (a JSON array), each owner a range of the primary key.
SELECT q.* FROM json_each(?) AS wanted
CROSS JOIN quiet_hours AS q
WHERE q.owner = wanted.value
ORDER BY q.owner, q.saver

-- name: IGNORING_QUIET_HOURS
-- Those of the reminders (a JSON array of ids) that ring through quiet hours: a primary-key
-- probe each, asked only for bulk rings that quiet hours would hold.
SELECT r.id FROM json_each(?) AS wanted
CROSS JOIN reminders AS r
WHERE r.id = wanted.value AND r.ignore_quiet

-- -- apps and secrets -------------------------------------------------------------------------

-- -- metrics --------------------------------------------------------------------------------------

-- name: _LANES_AND_RANKS
-- {lanes_and_ranks} of OLDEST_PENDING, COUNT_DUE and COUNT_OVERDUE: every lane (the 16 of
-- tocsin.ids.LANES) and every priority rank, the first two columns of the key of `due`, so
-- that each pair is one range scan of it.
lanes (lane) AS (SELECT 0 UNION ALL SELECT lane + 1 FROM lanes WHERE lane < {last_lane}),
ranks (rank) AS (SELECT 0 UNION ALL SELECT rank + 1 FROM ranks WHERE rank < {last_rank})

-- name: _SETTLED
-- {settled} of OLDEST_PENDING and COUNT_OVERDUE: the lowest watermark of the parts (-1 while a
-- part never ran): every occurrence before it is decided.
(SELECT CASE WHEN count(*) = count(watermark) THEN coalesce(min(watermark), -1) ELSE -1 END
 FROM leases)

-- name: OLDEST_PENDING
-- The due time of the oldest occurrence waiting: the first undecided entry of `due` of each
-- lane and priority after the lowest watermark ({settled}), then the earliest of those (NULL
-- when nothing waits).
WITH RECURSIVE {lanes_and_ranks}
SELECT min((
    SELECT d.due_at FROM due AS d
    WHERE d.lane = lanes.lane AND d.rank = ranks.rank AND d.bucket > {settled}
      AND NOT EXISTS (
          SELECT 1 FROM rings AS g
          WHERE (g.due_at, g.reminder_id, g.version) = (d.due_at, d.reminder_id, d.version)
      )
    ORDER BY d.bucket, d.due_at
    LIMIT 1
))
FROM lanes, ranks

-- name: DISABLE_WEBHOOK
UPDATE apps SET webhook_disabled = 1 WHERE name = ?

-- name: REVOKE_OWNER_TOKENS
-- Only ever later: revoking again never lets back in a token an earlier revocation refused.
INSERT INTO owner_token_revocations (owner, revoked_before) VALUES (?, ?)
ON CONFLICT (owner) DO UPDATE SET revoked_before = max(revoked_before, excluded.revoked_before)

-- name: RESEAL_APP
-- A re-sealed value written back only while the row still holds the value read (a value
-- changed meanwhile is left for the next pass).
UPDATE apps SET webhook_secret = ? WHERE name = ? AND webhook_secret = ?

-- name: RESEAL_CONTACT
UPDATE contacts SET secret = ? WHERE id = ? AND secret = ?

-- name: RESEAL_CONTACT_ADDRESS
UPDATE contacts SET address = ? WHERE id = ? AND address = ?

-- name: RESEAL_SHARED_VALUE
UPDATE secrets SET value = ? WHERE name = ? AND value = ?

-- -- the scheduler ----------------------------------------------------------------------------

-- name: _LOAD_LANE
-- The occurrences waiting in lane {lane} at priority rank {rank}, of a bucket range and a
-- shard range, in due order: a range scan of the key of `due`, (lane, rank, bucket, due_at,
-- reminder_id, version), that tests the shard range on each entry; only those after
-- (:after_bucket, :after_due, :after_id), up to :last_bucket: the next page (a first page
-- passes the range's first bucket and an instant before any), and none due after
-- :until in the last bucket (the sweep reads only what is due by now), a bound of the scan
-- as the cursor is. Each with what its claim
-- needs of its reminder's row, read by primary key (`CROSS JOIN` keeps `due` the outer
-- loop). The cursor is the scan's lower bound, so it is the only one: given a
-- `bucket >= :first_bucket` beside it, SQLite bounds the scan by that and tests the cursor
-- on every row before it; and never `:after_due IS NULL OR …`, which keeps it out of the
-- range scan (as it did on PostgreSQL's generic plan: postgres.sql, _LOAD_LANE). The bucket
-- is the last column, for the merge's order (`_LOAD_DUE`).
SELECT d.reminder_id AS id, d.due_at AS due_at, r.freshness, r.zone, r.anchor, r.rule,
    r.alerts, r.nag, r.nags, d.version, r.priority, d.prev_due, d.bucket AS bucket
FROM due AS d
CROSS JOIN reminders AS r
WHERE d.lane = {lane} AND d.rank = {rank}
  AND d.shard BETWEEN :first_shard AND :last_shard
  AND (d.bucket, d.due_at, d.reminder_id) > (:after_bucket, :after_due, :after_id)
  AND (d.bucket, d.due_at) <= (:last_bucket, :until)
  AND r.id = d.reminder_id
  AND NOT EXISTS (
      SELECT 1 FROM rings AS g
      WHERE (g.due_at, g.reminder_id, g.version) = (d.due_at, d.reminder_id, d.version)
  )

-- name: _LOAD_SAVED_LANE
-- The sweep's read of lane {lane} at priority rank {rank}, as PostgreSQL's: the occurrences
-- API writes saved after :since (`saved_at`, the partial index due_saved), in the shard
-- range, in buckets up to :last_bucket and in that one due by :through at the latest, not
-- decided since.
SELECT d.reminder_id AS id, d.due_at AS due_at, r.freshness, r.zone, r.anchor, r.rule,
    r.alerts, r.nag, r.nags, d.version, r.priority, d.prev_due, d.bucket AS bucket
FROM due AS d
CROSS JOIN reminders AS r
WHERE d.lane = {lane} AND d.rank = {rank} AND d.saved_at > :since
  AND d.shard BETWEEN :first_shard AND :last_shard
  AND (d.bucket, d.due_at) <= (:last_bucket, :through)
  AND r.id = d.reminder_id AND r.version = d.version
  AND NOT EXISTS (
      SELECT 1 FROM rings AS g
      WHERE (g.due_at, g.reminder_id, g.version) = (d.due_at, d.reminder_id, d.version)
  )

-- name: _LOAD_DUE
-- The occurrences waiting in the lanes of a shard range at one priority or both: the
-- {branches}, one `_LOAD_LANE` scan per lane and priority, joined by UNION ALL. The ORDER BY
-- of the compound, by the columns each branch reads in key order, makes SQLite merge them
-- as it reads (MERGE (UNION ALL): each branch read only as far as the merge takes it, which
-- stops at the limit). 32 branches load a page at ~3.2 µs a row, against ~2.3 µs for the
-- two of a `due` keyed without lanes (200,000 rows, pages of 500).
{branches}
ORDER BY bucket, due_at, id
LIMIT :limit

-- A batch of claims travels as one JSON array (`:claims`) of one array per claim: its firing
-- id (the delivery identity), then the fields of `batches.ClaimColumns` (the reminder id,
-- due_at and its minute, the loaded version, next_due_at, next_bucket, firing state, the
-- part, the epoch of the part's lease the claimer believes it holds — with :parts set, the
-- fencing token: see `domain.Fence` — and the error of a ring that could not be planned,
-- claimed `failed`), in the order `batches.SQLITE_CLAIMS` declares. The statements read each
-- field by name: `{claim.due_at}` is filled in, at import (`queries`), with the read of that
-- field from the claim's array `c.value`. The rings CLAIMABLE decides travel the same way
-- (`:rings`, `:firings`), in the order `queries.DECIDED` declares, read as `{ring.due_at}`
-- from `g.value`. Read with json_each, a whole batch is five statements, whatever its size,
-- and each answers in one row: the Python thread that runs them takes the GIL once per
-- statement, not once per ring (with a busy event loop beside it, each taking waits up to
-- the interpreter's switch interval).
--
-- The claim, in its one write transaction (nothing changes the rows between these), follows
-- PostgreSQL's CLAIM: CLAIMABLE decides, INSERT_RINGS records each ring decided (its key is
-- what decides the occurrence: its row of `due` stays, for tidying), INSERT_NEXT_DUE makes a series' next
-- occurrence wait, and INSERT_FIRINGS writes the firings to send (SQLite's claim writes
-- each ring's firing itself: migrations/sqlite/0015). The reminder's row is read, never
-- written.

-- name: CLAIMABLE
-- The rings the claims decide, as two JSON arrays of rows (`queries.DECIDED`): every ring
-- (`:rings` of INSERT_RINGS and INSERT_NEXT_DUE), and those to ring, the firings to write
-- (`:firings` of INSERT_FIRINGS). A claim decides a ring only while its reminder is still
-- pending at the version loaded (an edit, snooze or cancel since took the occurrence back,
-- and the claim loses: the scheduler rings the new version instead), no ring of it (nor a
-- `taken` row) is recorded at its key,
-- and, when :parts is set, the part's lease is still held by :sender at the epoch given. A
-- ring rings once under its delivery identity (`<reminder id>.<due epoch second>`, the
-- claim's `firing_id`): one rung already, by another version (a series edited back to an
-- instant that rang) or by a claim of an earlier release (its firing written), is a
-- `repeat`: it is recorded, makes no firing, and its series goes on. A ring for the in-app
-- feed alone is `queued` until its deadline, with the note :waiting, for a page to take (the
-- store announces it after the commit; PostgreSQL's CLAIM says why). `CROSS JOIN` keeps the
-- claims as the outer loop, so each reminder is found by its primary key. `decided` is
-- worked out once, MATERIALIZED: inlined, its columns are copied into each of the three
-- reads below, `repeat`'s probes with them (10 µs of CPU a ring against 15, batches of
-- 1,000 rings).
WITH decided AS MATERIALIZED (
    SELECT {claim.firing_id} AS firing_id, r.id AS reminder_id, r.owner, r.shard,
        {claim.due_at} AS due_at, {claim.due_at} + r.freshness * 1000000 AS deadline,
        r.channel, r.text, r.metadata, r.source,
        CASE WHEN {claim.state} = 'sending' AND r.channel = 'inapp'
            THEN 'queued' ELSE {claim.state} END AS state,
        CASE WHEN {claim.state} = 'sending' AND r.channel = 'inapp'
            THEN :waiting ELSE {claim.error} END AS error,
        r.priority,
        {claim.state} = 'sending' AND r.channel = 'inapp' AS feed,
        r.version, {claim.next_due_at} AS next_due_at, {claim.next_bucket} AS next_bucket,
        {claim.prev_due} AS prev_due,
        r.shard / 64 AS lane, coalesce(r.priority, 0) AS rank,
        EXISTS (
            SELECT 1 FROM rings AS g
            WHERE g.due_at = {claim.due_at} AND g.reminder_id = r.id AND NOT g.repeat
              AND NOT g.taken
        ) OR EXISTS (SELECT 1 FROM firings AS f WHERE f.id = {claim.firing_id}) AS repeat
    FROM json_each(:claims) AS c
    CROSS JOIN reminders AS r
    WHERE r.id = {claim.reminder_id} AND r.version = {claim.version} AND r.status = 'pending'
      AND NOT EXISTS (
          SELECT 1 FROM rings AS g
          WHERE (g.due_at, g.reminder_id, g.version) = ({claim.due_at}, r.id, r.version)
      )
      AND (:parts IS NULL OR EXISTS (
          SELECT 1 FROM leases AS l
          WHERE l.parts = :parts AND l.part = {claim.part}
            AND l.holder = :sender AND l.epoch = {claim.epoch}
      ))
)
SELECT json_group_array(json_array({ring_columns})) AS rings,
    json_group_array(json_array({ring_columns})) FILTER (WHERE NOT repeat) AS firings
FROM decided

-- name: INSERT_RINGS
-- Record each ring CLAIMABLE decided: its key, whether it is a repeat, and the occurrence
-- after it (NULL after a one-off's or a finished series' last), which readers follow.
INSERT INTO rings (due_at, reminder_id, version, repeat, next_due, prev_due)
SELECT {ring.due_at}, {ring.reminder_id}, {ring.version}, {ring.repeat}, {ring.next_due_at},
    {ring.prev_due}
FROM json_each(:rings) AS g

-- name: INSERT_NEXT_DUE
-- A series' next occurrence waits in `due` in its turn, at the version of the ring before
-- it (one there already, saved by an edit of the same version, is left as it is).
INSERT INTO due (lane, rank, bucket, due_at, reminder_id, version, shard, prev_due)
SELECT {ring.lane}, {ring.rank}, {ring.next_bucket}, {ring.next_due_at}, {ring.reminder_id},
    {ring.version}, {ring.shard}, {ring.due_at}
FROM json_each(:rings) AS g
WHERE {ring.next_due_at} IS NOT NULL
ON CONFLICT DO NOTHING

-- name: INSERT_FIRINGS
-- Insert the firings CLAIMABLE decided to ring (none exists: a clash is an error, never
-- skipped); a `sending` one is held by :sender until :lease_until.
INSERT INTO firings (
    id, reminder_id, owner, shard, due_at, deadline, channel, text, metadata, source, state,
    attempts, next_attempt_at, sender, lease_until, created_at, last_error, priority
)
SELECT {ring.firing_id}, {ring.reminder_id}, {ring.owner}, {ring.shard}, {ring.due_at},
       {ring.deadline}, {ring.channel}, {ring.text}, {ring.metadata}, {ring.source},
       {ring.state}, 0,
       CASE WHEN {ring.feed} THEN {ring.deadline}
           WHEN {ring.state} = 'queued' THEN :now END,
       CASE {ring.state} WHEN 'sending' THEN :sender END,
       CASE {ring.state} WHEN 'sending' THEN :lease_until END,
       :now, {ring.error}, {ring.priority}
FROM json_each(:firings) AS g

-- name: EXPIRE_OVERDUE
-- Firings that need a sender but are past their deadline become expired, saying so
-- (partial indexes firings_queued and firings_sending).
UPDATE firings
SET state = 'expired', sender = NULL, lease_until = NULL, next_attempt_at = NULL,
    last_error = 'expired: its deadline passed before it could be sent'
        || coalesce(' (last error: ' || last_error || ')', '')
WHERE id IN (
    SELECT id FROM firings
    WHERE state = 'queued' AND next_attempt_at <= :now AND deadline <= :now
      AND shard BETWEEN :first_shard AND :last_shard
    UNION ALL
    SELECT id FROM firings
    WHERE state = 'sending' AND lease_until < :now AND deadline <= :now
      AND shard BETWEEN :first_shard AND :last_shard
)

-- name: TAKE_DELIVERIES
-- Firings whose retry time came or whose sender vanished, still fresh, become held by the
-- caller — urgent ones first (priority NULL), then closest deadline first: each kind is a
-- range scan of its partial index over what is due now, then sorted by priority and deadline
-- (see the PostgreSQL statement for why not an index on deadline).
UPDATE firings
SET state = 'sending', sender = :sender, lease_until = :lease_until, next_attempt_at = NULL
WHERE id IN (
    SELECT id FROM (
        SELECT id, deadline, priority FROM firings
        WHERE state = 'queued' AND next_attempt_at <= :now AND deadline > :now
          AND shard BETWEEN :first_shard AND :last_shard
        UNION ALL
        SELECT id, deadline, priority FROM firings
        WHERE state = 'sending' AND lease_until < :now AND deadline > :now
          AND shard BETWEEN :first_shard AND :last_shard
    )
    ORDER BY priority NULLS FIRST, deadline
    LIMIT :limit
)
RETURNING *

-- A batch of results travels as one JSON array (`:results`) of one array per result: firing
-- id, sender, new state, next_attempt_at, then the round's last attempt's number, at, channel
-- and outcome (nulls when none was made), the firing's last error, the attempt's provider id,
-- destination and error, and the destination of a first try the firing row keeps
-- (`AttemptResult.sent_to`), in the order `batches.SQLITE_RESULTS` declares. The statements
-- read each field by name: `{result.sent_to}` is filled in, at import (`queries`), with the
-- read of that field from the result's array (`r.value` in INSERT_ATTEMPTS, `a.value` in
-- FINISH_ATTEMPTS). The rounds' attempts at other destinations travel the same way, one row
-- each (`batches.earlier_columns`: no result; state, next_attempt_at, last error and
-- sent_to null), and INSERT_ATTEMPTS records them too, run again with those rows as
-- `:results`.
--
-- A first try accepted with nothing to say, on the firing's own channel, stays on the firing
-- row (`sent_to`) and writes no attempts row: one row write instead of two for the common
-- ring (docs/architecture.md, "Row writes per ring").

-- name: INSERT_ATTEMPTS
-- The history entries of the attempts whose firing is still `sending` held by the reporting
-- sender: each round's last (none for a result without one, nor for a first try the firing
-- row keeps), or, given the rounds' earlier attempts, each of those. Run before
-- FINISH_ATTEMPTS in the same transaction, so both see the same firings. `CROSS JOIN` keeps
-- the array as the outer loop: firings are found by primary key, never through the partial
-- index firings_sending.
INSERT INTO attempts (firing_id, number, at, channel, outcome, error, provider_id, destination)
SELECT f.id, {result.number}, {result.at}, {result.channel}, {result.outcome}, {result.error},
       {result.provider_id}, {result.destination}
FROM json_each(:results) AS r
CROSS JOIN firings AS f
WHERE f.id = {result.firing_id} AND f.state = 'sending'
  AND f.sender = {result.sender}
  AND {result.number} IS NOT NULL
  AND NOT ({result.sent_to} IS NOT NULL AND f.channel = {result.channel})
ON CONFLICT (firing_id, number) DO NOTHING

-- name: FINISH_ATTEMPTS
-- Move each firing on after its attempt (or none), only while the reporting sender still
-- holds it; the row count is how many results applied.
UPDATE firings
SET state = {result.state},
    attempts = coalesce({result.number}, firings.attempts),
    next_attempt_at = CASE {result.state} WHEN 'queued'
        THEN coalesce({result.next_attempt_at}, {result.at}) END,
    sender = NULL,
    lease_until = NULL,
    sent_at = CASE {result.state} WHEN 'sent'
        THEN coalesce({result.at}, :now) ELSE firings.sent_at END,
    provider_id = coalesce({result.provider_id}, firings.provider_id),
    last_error = {result.last_error},
    sent_to = CASE WHEN firings.channel = {result.channel} THEN {result.sent_to} END
FROM json_each(:results) AS a
WHERE firings.id = {result.firing_id} AND firings.state = 'sending'
  AND firings.sender = {result.sender}

-- name: SETTLED_DESTINATIONS
-- The destinations a firing's attempts settled for good (its attempts are found by the
-- primary key's prefix), with a first try kept on the firing row; `channel:<name>` for an
-- attempt that found its channel with no destination.
SELECT coalesce(destination, 'channel:' || channel) AS destination, outcome FROM attempts
WHERE firing_id = :id AND outcome <> 'retry'
UNION ALL
SELECT sent_to, 'sent' FROM firings WHERE id = :id AND sent_to IS NOT NULL

-- -- apps and secrets -------------------------------------------------------------------------

-- name: RELEASE_DELIVERIES
-- Hand firings back unsent: still `sending` held by :sender, they become `queued` for any
-- taker at once (:ids is a JSON array).
UPDATE firings
SET state = 'queued', next_attempt_at = :now, sender = NULL, lease_until = NULL
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'sending' AND sender = :sender

-- -- leases ---------------------------------------------------------------------------------------

-- name: ENSURE_PARTS
-- Make the lease rows of a part count once; a new row starts from the lowest watermark any
-- other part count recorded (re-reading a few buckets is safe; skipping them is not).
WITH RECURSIVE numbers (value) AS (
    SELECT 0 UNION ALL SELECT value + 1 FROM numbers WHERE value + 1 < :parts
)
INSERT INTO leases (parts, part, watermark)
SELECT :parts, value, (SELECT min(watermark) FROM leases WHERE parts <> :parts)
FROM numbers
WHERE true
ON CONFLICT (parts, part) DO NOTHING

-- name: HELD
-- The parts a worker holds (expired or not: nobody else took them yet).
SELECT part FROM leases WHERE parts = ? AND holder = ? ORDER BY part

-- name: RELEASE_PART
UPDATE leases SET holder = NULL, expires_at = NULL WHERE parts = ? AND part = ? AND holder = ?

-- name: EXTEND_PART
UPDATE leases SET expires_at = ? WHERE parts = ? AND part = ? AND holder = ?

-- name: FREE_PARTS
-- Free or expired parts, lowest first.
SELECT part, holder FROM leases
WHERE parts = ? AND (holder IS NULL OR expires_at <= ?)
ORDER BY part
LIMIT ?

-- name: TAKE_PART
-- Taking a part starts a new epoch of its lease (the fencing token).
UPDATE leases SET holder = ?, expires_at = ?, epoch = epoch + 1 WHERE parts = ? AND part = ?

-- name: RELEASE_SOME
-- Give up some of a worker's leases.
UPDATE leases SET holder = NULL, expires_at = NULL
WHERE holder = ? AND part IN (SELECT value FROM json_each(?))

-- name: ADVANCE_WATERMARK
-- Raise a part's watermark, only while the worker holds it and only upwards, with the time of
-- the sweep that found nothing pending before it (:swept_at: a new holder sweeps from there).
UPDATE leases SET watermark = :bucket, swept_at = max(coalesce(swept_at, 0), :swept_at)
WHERE part = :part AND holder = :worker AND (watermark IS NULL OR watermark < :bucket)

-- -- the in-app feed ------------------------------------------------------------------------------

-- name: FEED_FIRINGS
-- The owner's in-app firings still fresh that wait for a page, and those sent since the
-- page's last event was (:after, none when NULL or not the owner's; see Store.feed_firings):
-- a range scan of firings_feed over (owner, deadline > now), the few rows found filtered and
-- sorted.
SELECT * FROM firings
WHERE owner = :owner AND channel = 'inapp' AND deadline > :now
  AND (state IN ('queued', 'sending')
       OR (state = 'sent' AND id <> :after
           AND sent_at >= (SELECT sent_at - {slack_us}
                           FROM firings WHERE id = :after AND owner = :owner)))
ORDER BY due_at, id
LIMIT :limit

-- name: FEED_RINGS
-- Announced firings that may still go on a page (:ids is a JSON array).
SELECT * FROM firings
WHERE id IN (SELECT value FROM json_each(:ids)) AND channel = 'inapp' AND deadline > :now
  AND state IN ('queued', 'sending', 'sent')

-- name: MARK_FEED_SENT
-- A page received these: each one still fresh and not final becomes `sent` with one more
-- attempt (whoever held it: a worker's later result no longer applies). Answers the attempt
-- number each took, for RECORD_FEED_ATTEMPT, and whether it stays on the firing row instead:
-- a first attempt does (`sent_to`), as on PostgreSQL.
UPDATE firings
SET state = 'sent', sent_at = :at, attempts = attempts + 1, sender = NULL,
    lease_until = NULL, next_attempt_at = NULL, last_error = NULL,
    sent_to = CASE WHEN attempts = 0 THEN 'feed' END
WHERE id IN (SELECT value FROM json_each(:ids)) AND channel = 'inapp'
  AND state IN ('queued', 'sending') AND deadline > :at
RETURNING id, attempts, sent_to IS NOT NULL

-- name: RECORD_FEED_ATTEMPT
INSERT INTO attempts (firing_id, number, at, channel, outcome, destination)
VALUES (?, ?, ?, 'inapp', 'sent', 'feed')
ON CONFLICT (firing_id, number) DO NOTHING

-- -- upkeep: retention ------------------------------------------------------------------------

-- One batch of old rings, in one write, as PostgreSQL's PRUNE_FIRINGS does it in one
-- statement (it says why each row may go or must stay): OLD_FIRINGS picks the batch and
-- FINISHED_BY_RING the reminders that go with it, both before anything is deleted (as that
-- statement's snapshot sees the rows); PRUNE_ATTEMPTS, PRUNE_FIRINGS and
-- PRUNE_FINISHED_BY_RING delete those by key; PRUNE_RINGS then judges `rings` by what is
-- left (as that statement names what it deletes).

-- name: OLD_FIRINGS
-- One batch of old rings: the oldest final firings due before :before, at most :limit (a
-- range scan of firings_due from its old end), each with its reminder and due instant; but
-- the last ring of a version that waits to ring again keeps its firing (its reminder pending
-- at the ring's version, the occurrence after it undecided: a probe of the key of `rings`):
-- readers show it as the reminder's last ring. And a firing stays while an earlier ring of
-- its reminder is on its way (queued or being sent: a probe of firings_open), so that its
-- last goes after it.
SELECT f.id, f.reminder_id, f.due_at FROM firings AS f
WHERE f.due_at < :before AND f.state IN ('sent', 'failed', 'expired')
  AND NOT EXISTS (
      SELECT 1 FROM firings AS open
      WHERE open.reminder_id = f.reminder_id
        AND CASE WHEN open.state IN ('queued', 'sending') THEN true END
        AND open.due_at < f.due_at
  )
  AND NOT EXISTS (
      SELECT 1 FROM reminders AS r
      JOIN rings AS g ON (g.due_at, g.reminder_id, g.version) = (f.due_at, r.id, r.version)
      WHERE r.id = f.reminder_id AND r.status = 'pending' AND g.next_due IS NOT NULL
        AND NOT EXISTS (
            SELECT 1 FROM rings AS h
            WHERE (h.due_at, h.reminder_id, h.version) = (g.next_due, r.id, r.version)
        )
  )
ORDER BY f.due_at
LIMIT :limit

-- name: FINISHED_BY_RING
-- Of the reminders of OLD_FIRINGS' batch (:reminders, a JSON array of ids), by primary key,
-- those that go with it, with their last ring's firing (as PostgreSQL's PRUNE_FIRINGS): their
-- rings ended them (a pending row its last ring made `fired` or `ended`, that ring due before
-- :before, walked to from the batch's rings of it, :starts, its firing in the batch or none;
-- or a row a claim of an earlier release finished, not pending, `due_at` its ring's instant,
-- due before :before: not in reminders_finished, that ring's firing in the batch).
SELECT reminder.id FROM ({reminders_now}) AS reminder
WHERE reminder.id IN (SELECT value FROM json_each(:reminders))
  AND ((reminder.status <> 'pending' AND reminder.due_at < :before
        AND reminder.id || '.' || (reminder.due_at / 1000000)
            IN (SELECT value FROM json_each(:firings)))
       OR (reminder.status = 'pending' AND reminder.now_status IN ('fired', 'ended')
           AND reminder.last_rung < :before
           AND (reminder.last_id IS NULL
                OR reminder.last_id IN (SELECT value FROM json_each(:firings)))))

-- name: PRUNE_ATTEMPTS
-- The attempts of the batch's firings (:firings, a JSON array of ids), by primary key.
DELETE FROM attempts WHERE firing_id IN (SELECT value FROM json_each(:firings))

-- name: PRUNE_FIRINGS
-- The batch's firings (:firings), by primary key.
DELETE FROM firings WHERE id IN (SELECT value FROM json_each(:firings))

-- name: PRUNE_FINISHED_BY_RING
-- The reminders FINISHED_BY_RING found (:reminders, a JSON array of ids), by primary key.
DELETE FROM reminders WHERE id IN (SELECT value FROM json_each(:reminders))

-- name: PRUNE_RINGS
-- The oldest rows of `rings` due before :before, at most :limit, that no reader starts from
-- or walks through any more, judged after the batch went (as PostgreSQL's PRUNE_FIRINGS
-- says): a later ring of its version is there (at its `next_due`) and its firing is gone,
-- or its reminder is gone or at another version; a range scan of the key of `rings` from its
-- old end.
DELETE FROM rings
WHERE (0, due_at, reminder_id, version) IN (  -- the whole key: TIDY_DUE says why 0
    SELECT 0, g.due_at, g.reminder_id, g.version FROM rings AS g
    WHERE g.due_at < :before
      AND (
          EXISTS (
              SELECT 1 FROM rings AS h
              WHERE (h.due_at, h.reminder_id, h.version)
                  = (g.next_due, g.reminder_id, g.version)
          ) AND NOT EXISTS (
              SELECT 1 FROM firings AS f
              WHERE f.id = g.reminder_id || '.' || (g.due_at / 1000000)
          )
          OR NOT EXISTS (
              SELECT 1 FROM reminders AS r
              WHERE r.id = g.reminder_id AND r.version = g.version
          )
      )
    ORDER BY g.due_at
    LIMIT :limit
)

-- name: TIDY_DUE
-- The occurrences decided in minutes before :before, at most :limit, oldest first in each
-- lane and priority (a range scan of the key of `due` each, the lanes and ranks as IN lists,
-- which keeps a minute's rows together: the deletes empty whole pages), as PostgreSQL's
-- TIDY_DUE: whose key a row of `rings` holds, or whose reminder is gone or at another
-- version. The key's columns come after a constant 0 on both sides: SQLite takes the
-- comparison affinity of a row value's IN from its first member, and with the INTEGER `lane`
-- there it probes the key by the columns before `reminder_id` alone (TEXT) and tests the rest
-- on every entry of them. A constant has no affinity, and the probe is by the whole key.
WITH RECURSIVE {lanes_and_ranks}
DELETE FROM due
WHERE (0, lane, rank, bucket, due_at, reminder_id, version) IN (
    SELECT 0, d.lane, d.rank, d.bucket, d.due_at, d.reminder_id, d.version FROM due AS d
    WHERE d.lane IN (SELECT lane FROM lanes) AND d.rank IN (SELECT rank FROM ranks)
      AND d.bucket < :before
      AND (
          EXISTS (
              SELECT 1 FROM rings AS g
              WHERE (g.due_at, g.reminder_id, g.version) = (d.due_at, d.reminder_id, d.version)
          )
          OR NOT EXISTS (
              SELECT 1 FROM reminders AS r
              WHERE r.id = d.reminder_id AND r.version = d.version
          )
      )
    LIMIT :limit
)

-- name: PRUNE_REMINDERS
-- One batch of the reminders finished otherwise (cancelled, or edited since their ring:
-- `due_at` NULL, not pending) last changed before :before, at most :limit, oldest first
-- (reminders_finished, whose predicate this one repeats), each once its last ring's firing
-- has gone (`rang_due_at`: a probe of the firings' key, ids `<reminder id>.<due second>`)
-- and none of its firings is on its way (a probe of firings_open), as on PostgreSQL.
DELETE FROM reminders WHERE id IN (
    SELECT id FROM reminders AS r
    WHERE status <> 'pending' AND due_at IS NULL AND updated_at < :before
      AND NOT EXISTS (
          SELECT 1 FROM firings AS f WHERE f.id = r.id || '.' || (r.rang_due_at / 1000000)
      )
      AND NOT EXISTS (
          SELECT 1 FROM firings AS f
          WHERE f.reminder_id = r.id
            AND CASE WHEN f.state IN ('queued', 'sending') THEN true END
      )
    ORDER BY updated_at
    LIMIT :limit
)

-- name: PRUNE_IDEMPOTENCY_KEYS
-- One batch of idempotency keys created before :before, at most :limit, oldest first
-- (idempotency_keys_age).
DELETE FROM idempotency_keys WHERE rowid IN (
    SELECT rowid FROM idempotency_keys
    WHERE created_at < :before
    ORDER BY created_at
    LIMIT :limit
)

-- name: HOLD_CHORE
-- Take or keep chore :name's lease for :worker until :until: only when free, run out (before
-- :now), or held by :worker already.
INSERT INTO chores (name, holder, expires_at) VALUES (:name, :worker, :until)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE chores.holder = excluded.holder OR chores.holder IS NULL OR chores.expires_at < :now

-- -- upkeep: time zone data upgrades ------------------------------------------------------------

-- name: ZONE_DATA_RECORDED
-- Whether tzdata release ? is recorded.
SELECT 1 FROM zone_data WHERE version = ? LIMIT 1

-- name: RECORD_ZONE_DATA
-- Record one zone's digest in a release, leaving a row recorded already.
INSERT OR IGNORE INTO zone_data (version, zone, digest) VALUES (?, ?, ?)

-- name: PENDING_IN_ZONES
-- The pending reminders with ids in (:after, :last] whose zone is one of :zones (JSON), as
-- their rows are (`reminders_now` then finds the occurrence that waits).
SELECT * FROM reminders
WHERE id > :after AND id <= :last AND status = 'pending'
  AND zone IN (SELECT value FROM json_each(:zones))
ORDER BY id

-- name: RESCHEDULE
-- Move a reminder to a new due time (:due_at, minute :bucket) after TAKE_BACK took back the
-- occurrence that waited as it was read (a claim, edit or cancel since then took it first,
-- and wins), keeping its last ring then (:rang, as UPDATE_REMINDER); the new occurrence
-- waits in `due` (INSERT_DUE).
UPDATE reminders
SET due_at = :due_at, bucket = :bucket, version = version + 1, updated_at = :now,
    rang_due_at = max(coalesce(:rang, rang_due_at), coalesce(rang_due_at, :rang))
WHERE id = :id AND version = :version AND status = 'pending'

-- -- the status board ---------------------------------------------------------------------------

-- name: STATUS_LEASES
-- The leases held at :now.
SELECT holder, part FROM leases
WHERE holder IS NOT NULL AND expires_at > :now
ORDER BY holder, part

-- name: COUNT_DUE
-- Occurrences waiting in each bucket of [:first, :last], each counted up to :cap: one range
-- scan of the key of `due` per lane, priority and bucket, each stopped at the cap; their
-- counts add up to the bucket's, capped again.
WITH RECURSIVE {lanes_and_ranks}, buckets (bucket) AS (
    SELECT :first UNION ALL SELECT bucket + 1 FROM buckets WHERE bucket < :last
)
SELECT buckets.bucket, min(:cap, (
    SELECT sum((
        SELECT count(*) FROM (
            SELECT 1 FROM due AS d
            WHERE d.lane = lanes.lane AND d.rank = ranks.rank AND d.bucket = buckets.bucket
              AND NOT EXISTS (
                  SELECT 1 FROM rings AS g
                  WHERE (g.due_at, g.reminder_id, g.version)
                      = (d.due_at, d.reminder_id, d.version)
              )
            LIMIT :cap
        )
    ))
    FROM lanes, ranks
)) AS due
FROM buckets

-- name: COUNT_OVERDUE
-- Occurrences waiting from before bucket :first, counted up to :cap (the sweep keeps them
-- few): one range scan of the key of `due` per lane and priority from the lowest watermark,
-- as COUNT_DUE.
WITH RECURSIVE {lanes_and_ranks}
SELECT min(:cap, sum((
    SELECT count(*) FROM (
        SELECT 1 FROM due AS d
        WHERE d.lane = lanes.lane AND d.rank = ranks.rank AND d.bucket < :first
          AND d.bucket > {settled}
          AND NOT EXISTS (
              SELECT 1 FROM rings AS g
              WHERE (g.due_at, g.reminder_id, g.version)
                  = (d.due_at, d.reminder_id, d.version)
          )
        LIMIT :cap
    )
)))
FROM lanes, ranks

-- name: SAMPLE_RINGS
-- The firings due in one minute [:start, :end) (microseconds), the :limit earliest at most,
-- with their lateness in seconds: a range scan of `firings_due`.
SELECT state, (sent_at - due_at) / 1e6 AS lateness FROM firings
WHERE due_at >= :start AND due_at < :end
ORDER BY due_at
LIMIT :limit

