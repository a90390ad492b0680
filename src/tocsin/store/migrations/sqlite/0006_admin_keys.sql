-- Apps are tenants: an app key sees and changes only the reminders its app saved. An admin
-- key (`tocsin keys create --admin`) sees and changes every app's, for operators.
ALTER TABLE apps ADD COLUMN admin INTEGER NOT NULL DEFAULT 0;
