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
    freshness, metadata, source, snoozed_from, version, created_at, updated_at, priority
) VALUES (
    :id, :owner, :shard, :text, :channel, :zone, :anchor, :rule, :at, :repeat, :status,
    :due_at, :bucket, :freshness, :metadata, :source, :snoozed_from, :version, :created_at,
    :updated_at, :priority
)

-- name: INSERT_IDEMPOTENCY
-- Save the idempotency record of a request; the primary key (scope, key) refuses a second.
INSERT INTO idempotency_keys (scope, key, request_hash, status_code, body, created_at)
VALUES (?, ?, ?, ?, ?, ?)

-- name: GET_REMINDER
-- One reminder with its last firing (newest due).
SELECT r.*, f.id AS last_id, f.due_at AS last_due_at, f.state AS last_state
FROM reminders AS r
LEFT JOIN firings AS f ON f.id = (
    SELECT id FROM firings WHERE id > r.id || '.' AND id < r.id || '/' ORDER BY id DESC LIMIT 1
)
WHERE r.id = ?

-- name: PENDING_COUNT
-- An owner's reminders after a given id, in id order, optionally of one status (index
-- reminders_owner), each with its last firing.
-- How many pending reminders an owner keeps from one app (NULL: the owner himself), among at
-- most :limit of the owner's rows read by reminders_owner (the status is judged outside the
-- read, as in the PostgreSQL query of the same name: so that the partial reminders_due is
-- never the index read).
SELECT count(*) FILTER (WHERE status = 'pending' AND source IS :source)
FROM (SELECT status, source FROM reminders WHERE owner = :owner LIMIT :limit)

-- name: LIST_REMINDERS
SELECT r.*, f.id AS last_id, f.due_at AS last_due_at, f.state AS last_state
FROM reminders AS r
LEFT JOIN firings AS f ON f.id = (
    SELECT id FROM firings WHERE id > r.id || '.' AND id < r.id || '/' ORDER BY id DESC LIMIT 1
)
WHERE r.owner = :owner AND r.id > :after_id AND (:status IS NULL OR r.status = :status)
  AND (:source IS NULL OR r.source = :source)
ORDER BY r.id
LIMIT :limit

-- name: UPDATE_REMINDER
-- Replace a reminder's mutable fields while its version is the expected one.
UPDATE reminders
SET text = :text, channel = :channel, zone = :zone, anchor = :anchor, rule = :rule, at = :at,
    repeat = :repeat, status = :status, due_at = :due_at, bucket = :bucket,
    freshness = :freshness, metadata = :metadata, version = :expected_version + 1,
    updated_at = :updated_at, priority = :priority
WHERE id = :id AND version = :expected_version

-- name: CANCEL_REMINDER
-- Cancel a reminder while it is pending.
UPDATE reminders
SET status = 'cancelled', due_at = NULL, bucket = NULL, version = version + 1, updated_at = ?
WHERE id = ? AND status = 'pending'

-- name: MARK_SNOOZED
-- Mark a firing snoozed by a new one-off, once, and say by which (PostgreSQL's statement of
-- the same name says why in one statement): the new one-off when this marked it, the other
-- one when it was snoozed already, no row when the firing does not exist.
UPDATE firings SET snoozed_by = coalesce(snoozed_by, ?) WHERE id = ? RETURNING snoozed_by

-- -- firings ------------------------------------------------------------------------------------

-- name: LIST_FIRINGS
-- A reminder's firings, newest due first, by primary key: a firing's id is
-- `<reminder id>.<due epoch second>` (see the PostgreSQL query of the same name).
SELECT * FROM firings WHERE id > :rid || '.' AND id < :rid || '/'
ORDER BY id DESC LIMIT :limit

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

-- name: DESTINATIONS
-- Where rings go: the enabled contacts of many (owner, kind) pairs (a JSON array of pairs),
-- each pair an index lookup of contacts_owner_kind.
SELECT c.* FROM json_each(?) AS wanted
CROSS JOIN contacts AS c
WHERE c.owner = json_extract(wanted.value, '$[0]') AND c.kind = json_extract(wanted.value, '$[1]')
  AND c.disabled_reason IS NULL
ORDER BY c.id

-- -- apps and secrets -------------------------------------------------------------------------

-- -- metrics --------------------------------------------------------------------------------------

-- name: OLDEST_PENDING
-- The oldest pending reminder's due time: the first entry of each priority of reminders_due
-- (keyed by the priority's rank, then bucket, due_at), the earlier of the two; no row when
-- nothing is pending.
SELECT min(due_at) FROM (
    SELECT * FROM (SELECT due_at FROM reminders
        WHERE status = 'pending' AND coalesce(priority, 0) = 0 ORDER BY bucket, due_at LIMIT 1)
    UNION ALL
    SELECT * FROM (SELECT due_at FROM reminders
        WHERE status = 'pending' AND coalesce(priority, 0) = 1 ORDER BY bucket, due_at LIMIT 1)
)
HAVING count(*) > 0

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

-- name: _LOAD_RANK
-- Pending reminders of a bucket range and a shard range at one priority, in due order: a range
-- scan of reminders_due, keyed in this order (coalesce(priority, 0), bucket, due_at, id) —
-- the priority rank {rank} first; only those after (:after_bucket, :after_due, :after_id), up
-- to :last_bucket: the next page (a first page passes the range's first bucket and an instant
-- before any). The cursor is the scan's lower bound, so it is the only one: given a
-- `bucket >= :first_bucket` beside it, SQLite bounds the scan by that and tests the cursor on
-- every row before it; and never `:after_due IS NULL OR …`, which keeps it out of the range
-- scan (as it did on PostgreSQL's generic plan: postgres.sql, _LOAD_LANE).
SELECT id, due_at, freshness, zone, anchor, rule, version, priority FROM reminders
WHERE status = 'pending' AND coalesce(priority, 0) = {rank}
  AND bucket <= :last_bucket
  AND shard BETWEEN :first_shard AND :last_shard
  AND (bucket, due_at, id) > (:after_bucket, :after_due, :after_id)
ORDER BY bucket, due_at, id
LIMIT :limit

-- name: _LOAD_DUE
-- Pending reminders of every priority: the {urgent} and {bulk} `_LOAD_RANK` scans, merged
-- (in due order: the bucket is the due time's minute).
SELECT * FROM (SELECT * FROM ({urgent}) UNION ALL SELECT * FROM ({bulk}))
ORDER BY due_at, id LIMIT :limit

-- A batch of claims travels as one JSON array (`:claims`) of one array per claim: its firing
-- id, reminder id, due_at, the loaded version, next_due_at, next_bucket, firing state, the
-- part, the epoch of the part's lease the claimer believes it holds (with :parts set, the
-- fencing token: see `domain.Fence`) and the error of a ring that could not be planned
-- (claimed `failed`), in the order `batches.SQLITE_CLAIMS` declares. The statements read each
-- field by name: `{claim.due_at}` is filled in, at import (`queries`), with the read of that
-- field from the claim's array `c.value`. Read with json_each, a whole batch
-- is three statements, whatever its size, and each answers in one row: the Python thread
-- that runs them takes the GIL once per statement, not once per ring (with a busy event loop
-- beside it, each taking waits up to the interpreter's switch interval).

-- name: CLAIMABLE
-- The firings the claims will make: for each claim whose row is still what was loaded
-- (pending, at the loaded due time and version), whose lease is still held at the epoch
-- given (when :parts is set), and whose firing id (the delivery identity) does not exist
-- yet, the firing built from the row, as one JSON array of [id, reminder_id, owner, shard,
-- due_at, deadline, channel, text, metadata, source, state, error, priority, feed] (`:firings` of
-- INSERT_FIRINGS). A ring for the in-app feed alone is `queued` until its deadline, with the
-- note :waiting, for a page to take (the store announces it after the commit; PostgreSQL's
-- CLAIM says why). Run first in the
-- claim's write transaction, so nothing changes the rows before they are claimed. `CROSS
-- JOIN` keeps the claims as the outer loop, so each reminder is found by its primary key:
-- `status = 'pending'` matches the partial index reminders_due too, and reading that whole
-- (every pending row of a burst) is what a claim must never do.
SELECT json_group_array(json_array(
    {claim.firing_id}, r.id, r.owner, r.shard, r.due_at,
    r.due_at + r.freshness * 1000000, r.channel, r.text, r.metadata, r.source,
    CASE WHEN {claim.state} = 'sending' AND r.channel = 'inapp'
        THEN 'queued' ELSE {claim.state} END,
    CASE WHEN {claim.state} = 'sending' AND r.channel = 'inapp'
        THEN :waiting ELSE {claim.error} END,
    r.priority,
    {claim.state} = 'sending' AND r.channel = 'inapp'
))
FROM json_each(:claims) AS c
CROSS JOIN reminders AS r
WHERE r.id = {claim.reminder_id} AND r.status = 'pending'
  AND r.due_at = {claim.due_at} AND r.version = {claim.version}
  AND (:parts IS NULL OR EXISTS (
      SELECT 1 FROM leases AS l
      WHERE l.parts = :parts AND l.part = {claim.part}
        AND l.holder = :sender AND l.epoch = {claim.epoch}
  ))
  AND NOT EXISTS (SELECT 1 FROM firings WHERE id = {claim.firing_id})

-- name: INSERT_FIRINGS
-- Insert the firings CLAIMABLE decided (none exists: a clash is an error, never skipped); a
-- `sending` one is held by :sender until :lease_until.
INSERT INTO firings (
    id, reminder_id, owner, shard, due_at, deadline, channel, text, metadata, source, state,
    attempts, next_attempt_at, sender, lease_until, created_at, last_error, priority
)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
       json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'),
       json_extract(value, '$[6]'), json_extract(value, '$[7]'), json_extract(value, '$[8]'),
       json_extract(value, '$[9]'), json_extract(value, '$[10]'), 0,
       CASE WHEN json_extract(value, '$[13]') THEN json_extract(value, '$[5]')
           WHEN json_extract(value, '$[10]') = 'queued' THEN :now END,
       CASE json_extract(value, '$[10]') WHEN 'sending' THEN :sender END,
       CASE json_extract(value, '$[10]') WHEN 'sending' THEN :lease_until END,
       :now, json_extract(value, '$[11]'), json_extract(value, '$[12]')
FROM json_each(:firings)

-- name: CLAIM_REMINDERS
-- The conditional update that starts a ring, for each claim of the batch: only while the row
-- is still what was loaded, under the same fence as CLAIMABLE. Moves a series on to its next
-- due time; ends a one-off or a finished series, keeping the due instant it rang at in
-- `due_at`: out of reminders_finished, it goes with its ring's firing (PostgreSQL's CLAIM).
UPDATE reminders
SET status = CASE
        WHEN {claim.next_due_at} IS NOT NULL THEN 'pending'
        WHEN reminders.rule IS NULL THEN 'fired'
        ELSE 'ended'
    END,
    due_at = coalesce({claim.next_due_at}, {claim.due_at}),
    bucket = {claim.next_bucket},
    version = reminders.version + 1,
    updated_at = :now
FROM json_each(:claims) AS c
WHERE reminders.id = {claim.reminder_id} AND reminders.status = 'pending'
  AND reminders.due_at = {claim.due_at} AND reminders.version = {claim.version}
  AND (:parts IS NULL OR EXISTS (
      SELECT 1 FROM leases AS l
      WHERE l.parts = :parts AND l.part = {claim.part}
        AND l.holder = :sender AND l.epoch = {claim.epoch}
  ))

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
-- Raise a part's watermark, only while the worker holds it and only upwards.
UPDATE leases SET watermark = :bucket
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

-- name: PRUNE_ATTEMPTS
-- The attempts of one batch of old firings: the oldest final firings due before :before, at
-- most :limit (a range scan of firings_due). Run first: in one write the batch is the same.
DELETE FROM attempts WHERE firing_id IN (
    SELECT id FROM firings
    WHERE due_at < :before AND state IN ('sent', 'failed', 'expired')
    ORDER BY due_at
    LIMIT :limit
)

-- name: PRUNE_FIRINGS
-- One batch of old firings: the same oldest final firings; each one's reminder id, for
-- PRUNE_FINISHED_BY_RING.
DELETE FROM firings WHERE id IN (
    SELECT id FROM firings
    WHERE due_at < :before AND state IN ('sent', 'failed', 'expired')
    ORDER BY due_at
    LIMIT :limit
)
RETURNING reminder_id

-- name: PRUNE_FINISHED_BY_RING
-- The reminders of the firings just deleted (:reminders, one JSON array of their ids), by
-- primary key, that their ring finished (not pending, `due_at` kept: not in
-- reminders_finished), once that ring is due before :before too and they have no firing left
-- (a probe of the firings' primary key): PostgreSQL's PRUNE_FIRINGS says why. Run after
-- PRUNE_FIRINGS in the same write.
DELETE FROM reminders
WHERE id IN (SELECT value FROM json_each(:reminders))
  AND status <> 'pending' AND due_at < :before
  AND NOT EXISTS (
      SELECT 1 FROM firings WHERE id > reminders.id || '.' AND id < reminders.id || '/'
  )

-- name: PRUNE_REMINDERS
-- One batch of the reminders finished otherwise (cancelled, or edited since their ring:
-- `due_at` NULL, not pending) last changed before :before, at most :limit, oldest first
-- (reminders_finished, whose predicate this one repeats), each only once its firings have
-- gone (a probe of the firings' primary key: ids `<reminder id>.<due second>`).
DELETE FROM reminders WHERE id IN (
    SELECT id FROM reminders AS r
    WHERE status <> 'pending' AND due_at IS NULL AND updated_at < :before
      AND NOT EXISTS (SELECT 1 FROM firings WHERE id > r.id || '.' AND id < r.id || '/')
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
-- The pending reminders with ids in (:after, :last] whose zone is one of :zones (JSON).
SELECT id, shard, zone, anchor, rule, due_at, version FROM reminders
WHERE id > :after AND id <= :last AND status = 'pending'
  AND zone IN (SELECT value FROM json_each(:zones))
ORDER BY id

-- name: RESCHEDULE
-- Move one reminder to a new due time, only while it is still pending at the due time and
-- version it was read with (a claim, edit or cancel since then wins).
UPDATE reminders
SET due_at = :due_at, bucket = :bucket, version = version + 1, updated_at = :now
WHERE id = :id AND version = :version AND due_at = :was AND status = 'pending'

-- -- the status board ---------------------------------------------------------------------------

-- name: STATUS_LEASES
-- The leases held at :now.
SELECT holder, part FROM leases
WHERE holder IS NOT NULL AND expires_at > :now
ORDER BY holder, part

-- name: COUNT_DUE
-- Pending reminders due in each bucket of [:first, :last], each counted up to :cap: one range
-- scan of `reminders_due` per priority and bucket, each stopped at the cap, then capped again.
WITH RECURSIVE buckets (bucket) AS (
    SELECT :first UNION ALL SELECT bucket + 1 FROM buckets WHERE bucket < :last
)
SELECT buckets.bucket, min(:cap, (
    SELECT count(*) FROM (
        SELECT 1 FROM reminders
        WHERE status = 'pending' AND coalesce(priority, 0) = 0
          AND reminders.bucket = buckets.bucket
        LIMIT :cap
    )
) + (
    SELECT count(*) FROM (
        SELECT 1 FROM reminders
        WHERE status = 'pending' AND coalesce(priority, 0) = 1
          AND reminders.bucket = buckets.bucket
        LIMIT :cap
    )
)) AS due
FROM buckets

-- name: COUNT_OVERDUE
-- Pending reminders due before bucket :first, counted up to :cap (the sweep keeps them few):
-- one range scan of `reminders_due` per priority.
SELECT min(:cap, (
    SELECT count(*) FROM (
        SELECT 1 FROM reminders
        WHERE status = 'pending' AND coalesce(priority, 0) = 0 AND bucket < :first LIMIT :cap
    )
) + (
    SELECT count(*) FROM (
        SELECT 1 FROM reminders
        WHERE status = 'pending' AND coalesce(priority, 0) = 1 AND bucket < :first LIMIT :cap
    )
))

-- name: SAMPLE_RINGS
-- The firings due in one minute [:start, :end) (microseconds), the :limit earliest at most,
-- with their lateness in seconds: a range scan of `firings_due`.
SELECT state, (sent_at - due_at) / 1e6 AS lateness FROM firings
WHERE due_at >= :start AND due_at < :end
ORDER BY due_at
LIMIT :limit

