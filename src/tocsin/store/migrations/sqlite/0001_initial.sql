-- Tocsin's first schema on SQLite.
-- Instants are INTEGER microseconds since the Unix epoch, UTC (exact round trips, cheap
-- comparisons); a bucket is the UTC epoch minute of `due_at`. JSON is TEXT.

-- One row per reminder. `shard` is the owner's logical shard (tocsin.ids.shard_of), which
-- the id carries as well; `due_at`/`bucket` are set exactly while `status` is pending.
CREATE TABLE reminders (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    shard INTEGER NOT NULL,
    text TEXT NOT NULL,
    channel TEXT NOT NULL,
    zone TEXT NOT NULL,
    anchor TEXT NOT NULL,
    rule TEXT,
    at TEXT,
    repeat TEXT,
    status TEXT NOT NULL CHECK (status IN ('pending', 'fired', 'ended', 'cancelled')),
    due_at INTEGER,
    bucket INTEGER,
    freshness INTEGER NOT NULL,
    metadata TEXT,
    source TEXT,
    snoozed_from TEXT,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    CHECK (status <> 'pending' OR (due_at IS NOT NULL AND bucket IS NOT NULL))
);

-- The scheduler's hot path: pending reminders of a bucket range and a shard range.
CREATE INDEX reminders_due ON reminders (bucket, shard) WHERE status = 'pending';

-- An owner's reminders in id (= creation) order, for keyset pagination.
CREATE INDEX reminders_owner ON reminders (owner, id);

-- One row per ring: the durable delivery record and queue entry. `id` is the delivery
-- identity `<reminder id>.<due epoch second>`.
CREATE TABLE firings (
    id TEXT PRIMARY KEY,
    reminder_id TEXT NOT NULL REFERENCES reminders (id) ON DELETE CASCADE,
    owner TEXT NOT NULL,
    shard INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    deadline INTEGER NOT NULL,
    channel TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT,
    source TEXT,
    state TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'sent', 'failed', 'expired')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    sender TEXT,
    lease_until INTEGER,
    created_at INTEGER NOT NULL,
    sent_at INTEGER,
    provider_id TEXT,
    last_error TEXT,
    snoozed_by TEXT
);

-- A reminder's firings, newest first (its history and its last firing).
CREATE INDEX firings_reminder ON firings (reminder_id, due_at);

-- The delivery queue: firings waiting for a retry, and firings being sent (whose sender may
-- have vanished). Partial, so they hold only live work.
CREATE INDEX firings_queued ON firings (next_attempt_at) WHERE state = 'queued';
CREATE INDEX firings_sending ON firings (lease_until) WHERE state = 'sending';

-- Every delivery attempt of a firing.
CREATE TABLE attempts (
    firing_id TEXT NOT NULL REFERENCES firings (id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    at INTEGER NOT NULL,
    channel TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('sent', 'retry', 'failed')),
    error TEXT,
    provider_id TEXT,
    PRIMARY KEY (firing_id, number)
);

-- Where an owner can be reached: push tokens, web-push subscriptions, email, phone.
CREATE TABLE contacts (
    owner TEXT NOT NULL,
    kind TEXT NOT NULL,
    address TEXT NOT NULL,
    data TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (owner, kind, address)
);

-- Apps allowed to call the API: one hashed key each, and where their webhooks go.
CREATE TABLE apps (
    name TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL UNIQUE,
    key_prefix TEXT NOT NULL,
    webhook_url TEXT,
    webhook_secret TEXT,
    webhook_disabled INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);

-- Answers to requests that carried an Idempotency-Key, replayed on retry.
CREATE TABLE idempotency_keys (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status_code INTEGER NOT NULL,
    body BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
);

-- Scheduler parts: who holds part `part` of `parts` until when, and the last bucket the
-- part finished (which stays with the part whoever holds it).
CREATE TABLE leases (
    parts INTEGER NOT NULL,
    part INTEGER NOT NULL,
    holder TEXT,
    expires_at INTEGER,
    watermark INTEGER,
    PRIMARY KEY (parts, part)
);

-- Worker heartbeats: the live workers share the parts.
CREATE TABLE workers (
    worker TEXT PRIMARY KEY,
    heartbeat_at INTEGER NOT NULL
);

-- Secrets every process sharing the database must agree on (owner-token signing key).
CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
