-- Revoking credentials (`tocsin keys revoke`, `tocsin keys revoke-owner`). A revoked app
-- keeps its row: its reminders still ring and still name it as their source, and the count
-- of apps, which closes the keyless loopback mode for good, never goes down.
ALTER TABLE apps ADD COLUMN revoked_at timestamptz;

-- Owner tokens are stateless (signed, with an expiry); revoking one owner's tokens refuses
-- every token of that owner signed at or before `revoked_before`. One row per owner ever
-- revoked, read by primary key when such a token is first seen (then cached for seconds).
CREATE TABLE owner_token_revocations (
    owner text NOT NULL,
    revoked_before timestamptz NOT NULL,
    CONSTRAINT owner_token_revocations_pkey PRIMARY KEY (owner)
);
