-- The statements both backends run with the same text (see __init__.py): named placeholders
-- (`:owner`), which sqlite3 takes as they are and the PostgreSQL store as `$n`, in the order
-- each name first appears. Nothing here may be one dialect's only: no `::` casts, no `$n`,
-- no `?`, no JSON functions; instants are parameters, never `now()`.

-- -- migrations -------------------------------------------------------------------------------

-- name: APPLIED_VERSIONS
-- Versions applied so far.
SELECT version FROM schema_migrations ORDER BY version

-- -- reminders --------------------------------------------------------------------------------

-- name: FIND_IDEMPOTENCY
-- The idempotency record saved under (scope, key).
SELECT scope, key, request_hash, status_code, body, created_at
FROM idempotency_keys WHERE scope = :scope AND key = :key

-- -- contacts ---------------------------------------------------------------------------------

-- name: INSERT_CONTACT
-- The parameters are the columns (`rows.contact_values`); address is JSON text.
INSERT INTO contacts (
    id, owner, shard, kind, address, label, secret, disabled_reason, disabled_at, created_at,
    updated_at, source
) VALUES (
    :id, :owner, :shard, :kind, :address, :label, :secret, :disabled_reason, :disabled_at,
    :created_at, :updated_at, :source
)

-- name: GET_CONTACT
SELECT * FROM contacts WHERE id = :id

-- name: UPDATE_CONTACT
-- Replace what an owner may change; the saved row comes back.
UPDATE contacts
SET address = :address, label = :label, disabled_reason = :disabled_reason,
    disabled_at = :disabled_at, updated_at = :updated_at
WHERE id = :id
RETURNING *

-- name: DELETE_CONTACT
DELETE FROM contacts WHERE id = :id RETURNING id

-- name: INSERT_PLACE
-- The parameters are the columns (`rows.place_values`).
INSERT INTO places (
    id, owner, shard, name, latitude, longitude, radius_m, source, created_at, updated_at
) VALUES (
    :id, :owner, :shard, :name, :latitude, :longitude, :radius_m, :source, :created_at,
    :updated_at
)

-- name: GET_PLACE
SELECT * FROM places WHERE id = :id

-- name: UPDATE_PLACE
-- Replace what an owner may change; the saved row comes back.
UPDATE places
SET name = :name, latitude = :latitude, longitude = :longitude, radius_m = :radius_m,
    updated_at = :updated_at
WHERE id = :id
RETURNING *

-- name: DELETE_PLACE
DELETE FROM places WHERE id = :id RETURNING id

-- name: SAVE_PLACE_TRIGGER
-- A reminder's place trigger, written in its create's or edit's transaction. An edit that
-- keeps the place and the event keeps when it rang last (so `once` holds across edits of
-- its words or its window); one that moves it elsewhere starts afresh.
INSERT INTO place_triggers (reminder_id, place_id, event, after_minute, before_minute, once)
VALUES (:reminder_id, :place_id, :event, :after_minute, :before_minute, :once)
ON CONFLICT (reminder_id) DO UPDATE
SET place_id = excluded.place_id, event = excluded.event,
    after_minute = excluded.after_minute, before_minute = excluded.before_minute,
    once = excluded.once,
    rang_at = CASE WHEN place_triggers.place_id = excluded.place_id
        AND place_triggers.event = excluded.event THEN place_triggers.rang_at END,
    rang_day = CASE WHEN place_triggers.place_id = excluded.place_id
        AND place_triggers.event = excluded.event THEN place_triggers.rang_day END

-- name: ARMED_AT_PLACE
-- The pending reminders a crossing may ring: the place's triggers of that event (a range of
-- place_triggers_place), each with its reminder's version, zone and freshness (a probe of
-- reminders_pkey). Read before the crossing's rings are decided (`ring_at_place`: on each
-- trigger's row).
SELECT t.*, r.version, r.zone, r.freshness
FROM place_triggers AS t JOIN reminders AS r ON r.id = t.reminder_id
WHERE t.place_id = :place_id AND t.event = :event AND r.status = 'pending'
ORDER BY t.reminder_id

-- name: PENDING_AT_PLACE
-- Up to :limit pending reminders that ring at a place, in id order (a range of
-- place_triggers_place by its first column, a probe of reminders_pkey each).
SELECT t.reminder_id FROM place_triggers AS t JOIN reminders AS r ON r.id = t.reminder_id
WHERE t.place_id = :place_id AND r.status = 'pending'
ORDER BY t.reminder_id
LIMIT :limit

-- name: SAVE_QUIET_HOURS
-- One saver's quiet hours for an owner (`saver` '' for the owner himself), replacing its own.
INSERT INTO quiet_hours (owner, saver, start_minute, end_minute, zone, updated_at)
VALUES (:owner, :saver, :start_minute, :end_minute, :zone, :updated_at)
ON CONFLICT (owner, saver) DO UPDATE
SET start_minute = excluded.start_minute, end_minute = excluded.end_minute,
    zone = excluded.zone, updated_at = excluded.updated_at

-- name: LIST_QUIET_HOURS
-- An owner's quiet hours, every saver's: a range of the primary key, the owner's own first.
SELECT * FROM quiet_hours WHERE owner = :owner ORDER BY saver

-- name: DELETE_QUIET_HOURS
DELETE FROM quiet_hours WHERE owner = :owner AND saver = :saver RETURNING owner

-- name: DISABLE_CONTACT
-- Disable a contact its provider called gone, once (the first reason is kept).
UPDATE contacts SET disabled_reason = :reason, disabled_at = :now, updated_at = :now
WHERE id = :id AND disabled_reason IS NULL
RETURNING id

-- name: INSERT_APP
-- The parameters are the columns (`rows.app_values`).
INSERT INTO apps (
    name, key_hash, key_prefix, webhook_url, webhook_secret, webhook_disabled, created_at,
    admin, priority
) VALUES (
    :name, :key_hash, :key_prefix, :webhook_url, :webhook_secret, :webhook_disabled,
    :created_at, :admin, :priority
)

-- name: FIND_APP_BY_NAME
SELECT * FROM apps WHERE name = :name

-- name: FIND_APP_BY_KEY_HASH
SELECT * FROM apps WHERE key_hash = :key_hash

-- name: LIST_APPS
SELECT * FROM apps ORDER BY name

-- name: COUNT_APPS
SELECT count(*) FROM apps

-- name: REVOKE_APP
UPDATE apps SET revoked_at = :at WHERE name = :name AND revoked_at IS NULL

-- name: REPLACE_APP_KEY
-- A new key for an app; a revoked app is live again with it.
UPDATE apps SET key_hash = :key_hash, key_prefix = :key_prefix, revoked_at = NULL
WHERE name = :name

-- name: OWNER_TOKENS_REVOKED_BEFORE
SELECT revoked_before FROM owner_token_revocations WHERE owner = :owner

-- name: KEEP_FIRST_SHARED_VALUE
-- Keep the first value saved under a name (table `secrets`).
INSERT INTO secrets (name, value) VALUES (:name, :value) ON CONFLICT (name) DO NOTHING

-- name: READ_SHARED_VALUE
SELECT value FROM secrets WHERE name = :name

-- Re-sealing secrets (`reseal_secrets`): one page of a sealed column in key order, after a key
-- (:after, at most :limit); each backend writes a page back its own way (RESEAL_*).

-- name: SEALED_APP_SECRETS
SELECT name, webhook_secret FROM apps
WHERE webhook_secret IS NOT NULL AND name > :after ORDER BY name LIMIT :limit

-- name: SEALED_CONTACT_SECRETS
SELECT id, secret FROM contacts WHERE secret IS NOT NULL AND id > :after ORDER BY id LIMIT :limit

-- name: SEALED_CONTACT_ADDRESSES
-- The addresses of the kinds with sealed fields (`rows.SEALED_FIELDS`).
SELECT id, address FROM contacts
WHERE kind IN ('webpush', 'apprise') AND id > :after ORDER BY id LIMIT :limit

-- name: SEALED_SHARED_VALUES
SELECT name, value FROM secrets WHERE name > :after ORDER BY name LIMIT :limit

-- -- metrics ----------------------------------------------------------------------------------

-- name: QUEUE_DEPTH
-- The delivery queue's depth by state: each count a scan of its partial index alone.
SELECT 'queued' AS state, count(*) AS n FROM firings WHERE state = 'queued'
UNION ALL
SELECT 'sending', count(*) FROM firings WHERE state = 'sending'

-- -- leases -----------------------------------------------------------------------------------

-- name: WAS_LIVE
-- Whether the worker was live (a heartbeat since :since); if not, it joins: the others
-- rebalance.
SELECT 1 FROM workers WHERE worker = :worker AND heartbeat_at >= :since

-- name: BEAT
-- A worker's heartbeat, with the providers whose breaker it has open (JSON, or NULL).
INSERT INTO workers (worker, heartbeat_at, breakers) VALUES (:worker, :at, :breakers)
ON CONFLICT (worker) DO UPDATE
SET heartbeat_at = excluded.heartbeat_at, breakers = excluded.breakers

-- name: FORGET_WORKERS
-- Forget workers silent for long (they are not live; this only keeps the table small).
DELETE FROM workers WHERE heartbeat_at < :before

-- name: COUNT_LIVE
-- Workers whose heartbeat is recent enough to count them live.
SELECT count(*) FROM workers WHERE heartbeat_at >= :since

-- name: WATERMARKS
SELECT part, watermark, epoch, swept_at FROM leases
WHERE parts = :parts AND holder = :worker ORDER BY part

-- name: NEXT_EXPIRY
-- When the first lease held by another worker runs out (a crashed worker's parts are taken
-- then, not a renewal period later).
SELECT min(expires_at) FROM leases
WHERE parts = :parts AND holder <> :worker AND expires_at > :now

-- name: RELEASE_ALL
-- Give up all of a worker's leases.
UPDATE leases SET holder = NULL, expires_at = NULL WHERE holder = :worker

-- name: FORGET_WORKER
DELETE FROM workers WHERE worker = :worker

-- -- upkeep -----------------------------------------------------------------------------------

-- name: RELEASE_CHORE
-- Let chore :name go, if :worker holds it.
UPDATE chores SET holder = NULL, expires_at = NULL WHERE name = :name AND holder = :worker

-- name: ZONE_DATA
-- Every recorded release's zone digests.
SELECT version, zone, digest FROM zone_data

-- name: FORGET_ZONE_DATA
-- Forget every release but :keep.
DELETE FROM zone_data WHERE version <> :keep

-- name: ZONE_PAGE_END
-- The last id of the next :scan reminders after id :after (an index-only range scan of the
-- primary key; NULL when there are none).
SELECT max(id) FROM (SELECT id FROM reminders WHERE id > :after ORDER BY id LIMIT :scan) AS page

-- -- the status board -------------------------------------------------------------------------

-- name: STATUS_WORKERS
-- Every worker's heartbeat row, with the breakers it reported (the table stays small: silent
-- workers are forgotten at renewals).
SELECT worker, heartbeat_at, breakers FROM workers ORDER BY worker

-- name: COUNT_QUIET
-- Firings held by quiet hours (their last error begins with :held) among the first :cap
-- queued, read through the partial index firings_queued: a backlog of retries is never read
-- whole. With as many queued as the cap, the count means at least.
SELECT count(*) FROM (
    SELECT last_error FROM firings WHERE state = 'queued' LIMIT :cap
) AS queued
WHERE last_error LIKE :held

-- name: COUNT_QUEUE
-- Firings waiting for a sender and being sent, each counted up to :cap through its partial
-- index.
SELECT
    (SELECT count(*) FROM (SELECT 1 FROM firings WHERE state = 'queued' LIMIT :cap) AS q),
    (SELECT count(*) FROM (SELECT 1 FROM firings WHERE state = 'sending' LIMIT :cap) AS s)

-- -- shared lists -----------------------------------------------------------------------------

-- name: INSERT_LIST
INSERT INTO lists (id, name, source, created_at, updated_at)
VALUES (:id, :name, :source, :created_at, :updated_at)

-- name: SAVE_MEMBER
-- Invite a member, or change a member's role (an accepted invitation stays accepted).
INSERT INTO list_members (list_id, member, role, invited_at, joined_at)
VALUES (:list_id, :member, :role, :invited_at, :joined_at)
ON CONFLICT (list_id, member) DO UPDATE SET role = excluded.role

-- name: JOIN_LIST
-- Accept an invitation (once: the first acceptance's time is kept).
UPDATE list_members SET joined_at = COALESCE(joined_at, :now)
WHERE list_id = :list_id AND member = :member
RETURNING member

-- name: REMOVE_MEMBER
DELETE FROM list_members WHERE list_id = :list_id AND member = :member RETURNING member

-- name: DELETE_MEMBERS
-- Every member of a list taken off it (the list is being deleted).
DELETE FROM list_members WHERE list_id = :id

-- name: DELETE_LIST
-- A list deleted, once its members are (DELETE_MEMBERS); its row's lock, taken here, is what a
-- list reminder's save waits for (HOLD_LISTS).
DELETE FROM lists WHERE id = :id RETURNING id

-- name: PENDING_OF_OWNER
-- The ids of an owner's reminders whose row is pending (a range of reminders_owner): a
-- list's, which its delete cancels.
SELECT id FROM reminders WHERE owner = :owner AND status = 'pending' ORDER BY id

-- name: RENAME_LIST
UPDATE lists SET name = :name, updated_at = :now WHERE id = :id RETURNING id

-- name: GET_LIST
-- A list with its members, a row each (none: a list with no member left has one row, of
-- NULL member).
SELECT l.id, l.name, l.source, l.created_at, l.updated_at,
       m.member, m.role, m.invited_at, m.joined_at
FROM lists AS l LEFT JOIN list_members AS m ON m.list_id = l.id
WHERE l.id = :id
ORDER BY m.member

-- name: MEMBER_LISTS
-- The lists `member` is on (invited or joined), each with all its members.
SELECT l.id, l.name, l.source, l.created_at, l.updated_at,
       m.member, m.role, m.invited_at, m.joined_at
FROM list_members AS mine
JOIN lists AS l ON l.id = mine.list_id
JOIN list_members AS m ON m.list_id = l.id
WHERE mine.member = :member
ORDER BY l.id, m.member

-- name: APP_LISTS
-- The lists app `source` made, each with all its members (lists_by_source).
SELECT l.id, l.name, l.source, l.created_at, l.updated_at,
       m.member, m.role, m.invited_at, m.joined_at
FROM lists AS l LEFT JOIN list_members AS m ON m.list_id = l.id
WHERE l.source = :source
ORDER BY l.id, m.member

-- name: ASSIGN_REMINDER
INSERT INTO list_assignees (reminder_id, assignee) VALUES (:reminder_id, :assignee)

-- name: PRUNE_ASSIGNEES
-- At most :limit assignees whose reminder retention deleted (an assignee is written with its
-- reminder, so only a deletion leaves one alone): a scan of list_assignees, a row per
-- assigned list reminder, with a probe of the reminders' primary key each.
DELETE FROM list_assignees WHERE reminder_id IN (
    SELECT a.reminder_id FROM list_assignees AS a
    WHERE NOT EXISTS (SELECT 1 FROM reminders AS r WHERE r.id = a.reminder_id)
    LIMIT :limit
)

-- name: UNASSIGN_REMINDER
-- A list reminder's assignee taken away (an edit: it rings every member now, or another).
DELETE FROM list_assignees WHERE reminder_id = :reminder_id

-- name: ASSIGNEE_OF
SELECT assignee FROM list_assignees WHERE reminder_id = :reminder_id
