"""Every SQL statement of the SQLite backend, named and described: one place per query.

Instants are INTEGER microseconds since the Unix epoch (UTC); see migrations/sqlite.
"""

from __future__ import annotations

# -- migrations -------------------------------------------------------------------------------

# The runner's own bookkeeping table, made before any migration runs.
CREATE_SCHEMA_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at INTEGER NOT NULL
)
"""

# Versions applied so far (empty result when the table does not exist is handled by caller).
APPLIED_VERSIONS = "SELECT version FROM schema_migrations ORDER BY version"

# Whether the bookkeeping table exists at all (a database never migrated).
HAS_SCHEMA_MIGRATIONS = (
    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
)

# Record one applied migration.
RECORD_MIGRATION = "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)"

# -- reminders --------------------------------------------------------------------------------

# Insert one reminder (run with executemany for a batch).
INSERT_REMINDER = """
INSERT INTO reminders (
    id, owner, shard, text, channel, zone, anchor, rule, at, repeat, status, due_at, bucket,
    freshness, metadata, source, snoozed_from, version, created_at, updated_at
) VALUES (
    :id, :owner, :shard, :text, :channel, :zone, :anchor, :rule, :at, :repeat, :status,
    :due_at, :bucket, :freshness, :metadata, :source, :snoozed_from, :version, :created_at,
    :updated_at
)
"""

# Save the idempotency record of a request; the primary key (scope, key) refuses a second.
INSERT_IDEMPOTENCY = """
INSERT INTO idempotency_keys (scope, key, request_hash, status_code, body, created_at)
VALUES (?, ?, ?, ?, ?, ?)
"""

# The idempotency record saved under (scope, key).
FIND_IDEMPOTENCY = """
SELECT scope, key, request_hash, status_code, body, created_at
FROM idempotency_keys WHERE scope = ? AND key = ?
"""

# One reminder with its last firing (newest due).
GET_REMINDER = """
SELECT r.*, f.id AS last_id, f.due_at AS last_due_at, f.state AS last_state
FROM reminders AS r
LEFT JOIN firings AS f ON f.id = (
    SELECT id FROM firings WHERE reminder_id = r.id ORDER BY due_at DESC LIMIT 1
)
WHERE r.id = ?
"""

# An owner's reminders after a given id, in id order, optionally of one status (index
# reminders_owner), each with its last firing.
LIST_REMINDERS = """
SELECT r.*, f.id AS last_id, f.due_at AS last_due_at, f.state AS last_state
FROM reminders AS r
LEFT JOIN firings AS f ON f.id = (
    SELECT id FROM firings WHERE reminder_id = r.id ORDER BY due_at DESC LIMIT 1
)
WHERE r.owner = :owner AND r.id > :after_id AND (:status IS NULL OR r.status = :status)
ORDER BY r.id
LIMIT :limit
"""

# Replace a reminder's mutable fields while its version is the expected one.
UPDATE_REMINDER = """
UPDATE reminders
SET text = :text, channel = :channel, zone = :zone, anchor = :anchor, rule = :rule, at = :at,
    repeat = :repeat, status = :status, due_at = :due_at, bucket = :bucket,
    freshness = :freshness, metadata = :metadata, version = :expected_version + 1,
    updated_at = :updated_at
WHERE id = :id AND version = :expected_version
"""

# Cancel a reminder while it is pending.
CANCEL_REMINDER = """
UPDATE reminders
SET status = 'cancelled', due_at = NULL, bucket = NULL, version = version + 1, updated_at = ?
WHERE id = ? AND status = 'pending'
"""

# Mark a firing snoozed by a new one-off, once.
MARK_SNOOZED = "UPDATE firings SET snoozed_by = ? WHERE id = ? AND snoozed_by IS NULL"

# -- firings ------------------------------------------------------------------------------------

# A reminder's firings, newest due first.
LIST_FIRINGS = "SELECT * FROM firings WHERE reminder_id = ? ORDER BY due_at DESC LIMIT ?"

# The attempts of several firings (ids given as a JSON array).
LIST_ATTEMPTS = """
SELECT * FROM attempts
WHERE firing_id IN (SELECT value FROM json_each(?))
ORDER BY firing_id, number
"""

# -- apps and secrets -------------------------------------------------------------------------

INSERT_APP = """
INSERT INTO apps (
    name, key_hash, key_prefix, webhook_url, webhook_secret, webhook_disabled, created_at
) VALUES (?, ?, ?, ?, ?, ?, ?)
"""

FIND_APP_BY_NAME = "SELECT * FROM apps WHERE name = ?"

FIND_APP_BY_KEY_HASH = "SELECT * FROM apps WHERE key_hash = ?"

LIST_APPS = "SELECT * FROM apps ORDER BY name"

COUNT_APPS = "SELECT count(*) FROM apps"

DISABLE_WEBHOOK = "UPDATE apps SET webhook_disabled = 1 WHERE name = ?"

# Keep the first value saved under a name (table `secrets`).
KEEP_FIRST_SHARED_VALUE = """
INSERT INTO secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING
"""

READ_SHARED_VALUE = "SELECT value FROM secrets WHERE name = ?"

# -- the scheduler ----------------------------------------------------------------------------

# Pending reminders of a bucket range and a shard range: a range scan of reminders_due; with
# :after_due/:after_id, only those ordered after that (due_at, id): the next page.
LOAD_DUE = """
SELECT id, due_at, freshness, zone, anchor, rule FROM reminders
WHERE status = 'pending'
  AND bucket BETWEEN :first_bucket AND :last_bucket
  AND shard BETWEEN :first_shard AND :last_shard
  AND (:after_due IS NULL OR (due_at, id) > (:after_due, :after_id))
ORDER BY due_at, id
LIMIT :limit
"""

# The conditional update that starts a ring: only while the row is still pending at the
# loaded due time. Moves a series on to its next due time; ends a one-off or a finished series.
CLAIM_REMINDER = """
UPDATE reminders
SET status = CASE
        WHEN :next_due_at IS NOT NULL THEN 'pending'
        WHEN rule IS NULL THEN 'fired'
        ELSE 'ended'
    END,
    due_at = :next_due_at,
    bucket = :next_bucket,
    version = version + 1,
    updated_at = :now
WHERE id = :id AND status = 'pending' AND due_at = :due_at
RETURNING owner, shard, text, channel, metadata, source, freshness
"""

# The firing of one claimed ring; its id (the delivery identity) is inserted once only.
INSERT_FIRING = """
INSERT INTO firings (
    id, reminder_id, owner, shard, due_at, deadline, channel, text, metadata, source, state,
    attempts, next_attempt_at, sender, lease_until, created_at
) VALUES (
    :id, :reminder_id, :owner, :shard, :due_at, :deadline, :channel, :text, :metadata, :source,
    :state, 0, :next_attempt_at, :sender, :lease_until, :now
)
ON CONFLICT (id) DO NOTHING
"""

# Firings that need a sender but are past their deadline become expired (partial indexes
# firings_queued and firings_sending).
EXPIRE_OVERDUE = """
UPDATE firings
SET state = 'expired', sender = NULL, lease_until = NULL, next_attempt_at = NULL
WHERE id IN (
    SELECT id FROM firings
    WHERE state = 'queued' AND next_attempt_at <= :now AND deadline <= :now
      AND shard BETWEEN :first_shard AND :last_shard
    UNION ALL
    SELECT id FROM firings
    WHERE state = 'sending' AND lease_until < :now AND deadline <= :now
      AND shard BETWEEN :first_shard AND :last_shard
)
"""

# Firings whose retry time came or whose sender vanished, still fresh, become held by the
# caller.
TAKE_DELIVERIES = """
UPDATE firings
SET state = 'sending', sender = :sender, lease_until = :lease_until, next_attempt_at = NULL
WHERE id IN (
    SELECT id FROM firings
    WHERE state = 'queued' AND next_attempt_at <= :now AND deadline > :now
      AND shard BETWEEN :first_shard AND :last_shard
    UNION ALL
    SELECT id FROM firings
    WHERE state = 'sending' AND lease_until < :now AND deadline > :now
      AND shard BETWEEN :first_shard AND :last_shard
    LIMIT :limit
)
RETURNING *
"""

# Move a firing on after one attempt (or none: :number NULL), only while the reporting sender
# still holds it.
FINISH_ATTEMPT = """
UPDATE firings
SET state = :state,
    attempts = coalesce(:number, attempts),
    next_attempt_at = CASE WHEN :state = 'queued' THEN coalesce(:next_attempt_at, :at) END,
    sender = NULL,
    lease_until = NULL,
    sent_at = CASE WHEN :state = 'sent' THEN :at ELSE sent_at END,
    provider_id = coalesce(:provider_id, provider_id),
    last_error = :error
WHERE id = :firing_id AND state = 'sending' AND sender = :sender
"""

# The history entry of one attempt.
INSERT_ATTEMPT = """
INSERT INTO attempts (firing_id, number, at, channel, outcome, error, provider_id)
VALUES (:firing_id, :number, :at, :channel, :outcome, :error, :provider_id)
ON CONFLICT (firing_id, number) DO NOTHING
"""

# Hand firings back unsent: still `sending` held by :sender, they become `queued` for any
# taker at once (:ids is a JSON array).
RELEASE_DELIVERIES = """
UPDATE firings
SET state = 'queued', next_attempt_at = :now, sender = NULL, lease_until = NULL
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'sending' AND sender = :sender
"""

# -- leases ---------------------------------------------------------------------------------------

# A worker's heartbeat.
BEAT = """
INSERT INTO workers (worker, heartbeat_at) VALUES (?, ?)
ON CONFLICT (worker) DO UPDATE SET heartbeat_at = excluded.heartbeat_at
"""

# Forget workers silent for long (they are not live; this only keeps the table small).
FORGET_WORKERS = "DELETE FROM workers WHERE heartbeat_at < ?"

# Workers whose heartbeat is recent enough to count them live.
COUNT_LIVE = "SELECT count(*) FROM workers WHERE heartbeat_at >= ?"

# Make the lease rows of a part count once; a new row starts from the lowest watermark any
# other part count recorded (re-reading a few buckets is safe; skipping them is not).
ENSURE_PARTS = """
WITH RECURSIVE numbers (value) AS (
    SELECT 0 UNION ALL SELECT value + 1 FROM numbers WHERE value + 1 < :parts
)
INSERT INTO leases (parts, part, watermark)
SELECT :parts, value, (SELECT min(watermark) FROM leases WHERE parts <> :parts)
FROM numbers
WHERE true
ON CONFLICT (parts, part) DO NOTHING
"""

# The parts a worker holds (expired or not: nobody else took them yet).
HELD = "SELECT part FROM leases WHERE parts = ? AND holder = ? ORDER BY part"

RELEASE_PART = """
UPDATE leases SET holder = NULL, expires_at = NULL WHERE parts = ? AND part = ? AND holder = ?
"""

EXTEND_PART = "UPDATE leases SET expires_at = ? WHERE parts = ? AND part = ? AND holder = ?"

# Free or expired parts, lowest first.
FREE_PARTS = """
SELECT part FROM leases
WHERE parts = ? AND (holder IS NULL OR expires_at <= ?)
ORDER BY part
LIMIT ?
"""

TAKE_PART = "UPDATE leases SET holder = ?, expires_at = ? WHERE parts = ? AND part = ?"

WATERMARKS = "SELECT part, watermark FROM leases WHERE parts = ? AND holder = ? ORDER BY part"

# Give up a worker's leases (all of them, or some).
RELEASE_ALL = "UPDATE leases SET holder = NULL, expires_at = NULL WHERE holder = ?"

RELEASE_SOME = """
UPDATE leases SET holder = NULL, expires_at = NULL
WHERE holder = ? AND part IN (SELECT value FROM json_each(?))
"""

FORGET_WORKER = "DELETE FROM workers WHERE worker = ?"

# Raise a part's watermark, only while the worker holds it and only upwards.
ADVANCE_WATERMARK = """
UPDATE leases SET watermark = :bucket
WHERE part = :part AND holder = :worker AND (watermark IS NULL OR watermark < :bucket)
"""
