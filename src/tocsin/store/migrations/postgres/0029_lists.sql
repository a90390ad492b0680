-- Shared lists (docs/api.md, "Shared lists"): a list, its members with their role, and the
-- assignee of a list's reminder. A list's reminders are owned by the list itself (owner
-- `list#<id>`), so a ring knows from its owner alone that it is a list's: reminders of no
-- list are created, loaded and claimed as before, and nothing here is read for them.
-- `source` is the app whose key made the list, NULL for one an owner made himself: apps are
-- tenants, as with contacts.
CREATE TABLE lists (
    id text COLLATE "C" NOT NULL,
    name text NOT NULL,
    source text COLLATE "C",
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT lists_pkey PRIMARY KEY (id)
);
CREATE INDEX lists_by_source ON lists (source, id) WHERE source IS NOT NULL;

-- A list's members: `joined_at` NULL while invited (an invitation never rings anyone).
-- Read by list (the primary key's prefix) when a list's ring is sent, and by member for the
-- lists someone is on.
CREATE TABLE list_members (
    list_id text COLLATE "C" NOT NULL REFERENCES lists (id),
    member text COLLATE "C" NOT NULL,
    role text NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
    invited_at timestamptz NOT NULL,
    joined_at timestamptz,
    CONSTRAINT list_members_pkey PRIMARY KEY (list_id, member)
);
CREATE INDEX list_members_by_member ON list_members (member, list_id);

-- The one member a list's reminder rings, when it has one: a row only for such a reminder,
-- written in the transaction that saves it.
CREATE TABLE list_assignees (
    reminder_id text COLLATE "C" NOT NULL,
    assignee text COLLATE "C" NOT NULL,
    CONSTRAINT list_assignees_pkey PRIMARY KEY (reminder_id)
);
