-- The schema every migration together makes: a snapshot, compared with a freshly
-- migrated database by tests/integration/store/test_migrations.py. Regenerate with
-- `.venv/bin/python -m tests.integration.store.schema`; never edit by hand.

CREATE TABLE apps (
    name TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL UNIQUE,
    key_prefix TEXT NOT NULL,
    webhook_url TEXT,
    webhook_secret TEXT,
    webhook_disabled INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
, admin INTEGER NOT NULL DEFAULT 0, revoked_at INTEGER, priority INTEGER CHECK (priority = 1));

CREATE TABLE attempts (
    firing_id TEXT NOT NULL REFERENCES firings (id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    at INTEGER NOT NULL,
    channel TEXT NOT NULL,
    outcome TEXT NOT NULL CHECK (outcome IN ('sent', 'retry', 'failed')),
    error TEXT,
    provider_id TEXT, destination TEXT,
    PRIMARY KEY (firing_id, number)
);

CREATE TABLE chores (
    name TEXT PRIMARY KEY,
    holder TEXT,
    expires_at INTEGER
);

CREATE TABLE contacts (
    id TEXT NOT NULL PRIMARY KEY,
    owner TEXT NOT NULL,
    shard INTEGER NOT NULL,
    kind TEXT NOT NULL,
    address TEXT NOT NULL,
    label TEXT,
    secret TEXT,
    disabled_reason TEXT,
    disabled_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
, source TEXT);

CREATE TABLE due (
    lane INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    due_at INTEGER NOT NULL,
    reminder_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    shard INTEGER NOT NULL, saved_at INTEGER, prev_due INTEGER,
    PRIMARY KEY (lane, rank, bucket, due_at, reminder_id, version)
) WITHOUT ROWID;

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
, sent_to TEXT, priority INTEGER CHECK (priority = 1), done_at INTEGER, prev_due INTEGER);

CREATE TABLE idempotency_keys (
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status_code INTEGER NOT NULL,
    body BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
);

CREATE TABLE leases (
    parts INTEGER NOT NULL,
    part INTEGER NOT NULL,
    holder TEXT,
    expires_at INTEGER,
    watermark INTEGER, epoch INTEGER NOT NULL DEFAULT 0, swept_at INTEGER,
    PRIMARY KEY (parts, part)
);

CREATE TABLE list_assignees (
    reminder_id TEXT PRIMARY KEY,
    assignee TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE list_members (
    list_id TEXT NOT NULL REFERENCES lists (id),
    member TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
    invited_at INTEGER NOT NULL,
    joined_at INTEGER,
    PRIMARY KEY (list_id, member)
) WITHOUT ROWID;

CREATE TABLE lists (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    source TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE owner_token_revocations (
    owner TEXT PRIMARY KEY,
    revoked_before INTEGER NOT NULL
);

CREATE TABLE place_triggers (
    reminder_id TEXT NOT NULL PRIMARY KEY
        REFERENCES reminders (id) ON DELETE CASCADE,
    place_id TEXT NOT NULL,
    event TEXT NOT NULL CHECK (event IN ('arrive', 'leave')),
    after_minute INTEGER CHECK (after_minute BETWEEN 0 AND 1439),
    before_minute INTEGER CHECK (before_minute BETWEEN 0 AND 1439),
    once TEXT CHECK (once IN ('day', 'ever')),
    rang_at INTEGER,
    rang_day TEXT
) WITHOUT ROWID;

CREATE TABLE places (
    id TEXT NOT NULL PRIMARY KEY,
    owner TEXT NOT NULL,
    shard INTEGER NOT NULL,
    name TEXT NOT NULL,
    latitude REAL NOT NULL,
    longitude REAL NOT NULL,
    radius_m INTEGER NOT NULL,
    source TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE quiet_hours (
    owner TEXT NOT NULL,
    saver TEXT NOT NULL,
    start_minute INTEGER NOT NULL CHECK (start_minute BETWEEN 0 AND 1439),
    end_minute INTEGER NOT NULL CHECK (end_minute BETWEEN 0 AND 1439),
    zone TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (owner, saver),
    CHECK (start_minute <> end_minute)
) WITHOUT ROWID;

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
    updated_at INTEGER NOT NULL, priority INTEGER CHECK (priority = 1), ignore_quiet INTEGER CHECK (ignore_quiet = 1), alerts text, nag INTEGER CHECK (nag > 0), nags INTEGER CHECK (nags > 0), rang_due_at INTEGER,
    CHECK (status <> 'pending' OR (due_at IS NOT NULL AND bucket IS NOT NULL))
);

CREATE TABLE rings (
    due_at INTEGER NOT NULL,
    reminder_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    next_due INTEGER, taken INTEGER NOT NULL DEFAULT 0, prev_due INTEGER,
    PRIMARY KEY (due_at, reminder_id, version)
) WITHOUT ROWID;

CREATE TABLE schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at INTEGER NOT NULL
);

CREATE TABLE secrets (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE workers (
    worker TEXT PRIMARY KEY,
    heartbeat_at INTEGER NOT NULL
, breakers TEXT);

CREATE TABLE zone_data (
    version TEXT NOT NULL,
    zone TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (version, zone)
);

CREATE INDEX contacts_owner_kind ON contacts (owner, kind, id);

CREATE INDEX due_saved ON due (lane, rank, saved_at) WHERE saved_at IS NOT NULL;

CREATE INDEX firings_due ON firings (due_at);

CREATE INDEX firings_feed ON firings (owner, deadline) WHERE channel = 'inapp';

CREATE INDEX firings_open ON firings (reminder_id)
    WHERE CASE WHEN state IN ('queued', 'sending') THEN true END;

CREATE INDEX firings_queued ON firings (next_attempt_at) WHERE state = 'queued';

CREATE INDEX firings_sending ON firings (lease_until) WHERE state = 'sending';

CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);

CREATE INDEX list_members_by_member ON list_members (member, list_id);

CREATE INDEX lists_by_source ON lists (source, id) WHERE source IS NOT NULL;

CREATE INDEX place_triggers_place ON place_triggers (place_id, event);

CREATE INDEX places_owner ON places (owner, id);

CREATE INDEX reminders_finished ON reminders (updated_at)
    WHERE status <> 'pending' AND due_at IS NULL;

CREATE INDEX reminders_owner ON reminders (owner, id);
