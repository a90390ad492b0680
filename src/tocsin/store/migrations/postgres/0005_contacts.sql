-- Where the rings of an owner go: one row per device, subscription, address, number or URL.
-- The channel of a reminder names a kind, and its ring goes to every enabled contact of that kind
-- that its owner has, found by (owner, kind) in id order.
-- The first schema had a placeholder table keyed by (owner, kind, address) that nothing wrote:
-- contacts need ids of their own (an owner names one to change or delete it).
DROP TABLE contacts;

CREATE TABLE contacts (
    id text COLLATE "C" NOT NULL PRIMARY KEY,
    owner text COLLATE "C" NOT NULL,
    shard smallint NOT NULL,
    kind text COLLATE "C" NOT NULL,
    address text COLLATE "C" NOT NULL,
    label text COLLATE "C",
    secret text COLLATE "C",
    disabled_reason text COLLATE "C",
    disabled_at timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX contacts_owner_kind ON contacts (owner, kind, id);

-- Each attempt is one send to one destination: the contact it went to (NULL where the
-- channel has no contacts: the webhook endpoint of an app, the log).
ALTER TABLE attempts ADD COLUMN destination text COLLATE "C";
