-- Where the rings of an owner go: one row per device, subscription, address, number or URL.
-- The channel of a reminder names a kind, and its ring goes to every enabled contact of that kind
-- that its owner has, found by (owner, kind) in id order.
-- The first schema had a placeholder table keyed by (owner, kind, address) that nothing wrote:
-- contacts need ids of their own (an owner names one to change or delete it).
DROP TABLE contacts;

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
);
CREATE INDEX contacts_owner_kind ON contacts (owner, kind, id);

-- Each attempt is one send to one destination: the contact it went to (NULL where the
-- channel has no contacts: the webhook endpoint of an app, the log).
ALTER TABLE attempts ADD COLUMN destination TEXT;
