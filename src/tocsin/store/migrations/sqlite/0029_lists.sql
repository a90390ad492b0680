-- Shared lists (docs/api.md, "Shared lists"): a list, its members with their role, and the
-- assignee of a list's reminder. A list's reminders are owned by the list itself (owner
-- `list#<id>`), so a ring knows from its owner alone that it is a list's: reminders of no
-- list are created, loaded and claimed as before, and nothing here is read for them.
-- `source` is the app whose key made the list, NULL for one an owner made himself: apps are
-- tenants, as with contacts.
CREATE TABLE lists (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    source TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX lists_by_source ON lists (source, id) WHERE source IS NOT NULL;

-- A list's members: `joined_at` NULL while invited (an invitation never rings anyone).
-- Read by list (the primary key's prefix) when a list's ring is sent, and by member for the
-- lists someone is on.
CREATE TABLE list_members (
    list_id TEXT NOT NULL REFERENCES lists (id),
    member TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
    invited_at INTEGER NOT NULL,
    joined_at INTEGER,
    PRIMARY KEY (list_id, member)
) WITHOUT ROWID;
CREATE INDEX list_members_by_member ON list_members (member, list_id);

-- The one member a list's reminder rings, when it has one: a row only for such a reminder,
-- written in the transaction that saves it.
CREATE TABLE list_assignees (
    reminder_id TEXT PRIMARY KEY,
    assignee TEXT NOT NULL
) WITHOUT ROWID;
