-- Apps are tenants, and so are their contacts: `source` is the app whose key saved the contact
-- (NULL: the owner saved it himself, with an owner token or the page). An app's ring goes to
-- its own contacts and to the owner's; an app key sees and changes only its own. Contacts saved
-- before this migration have no source: they count as the owner's own.
ALTER TABLE contacts ADD COLUMN source text COLLATE "C";
