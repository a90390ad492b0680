-- A reminder's firings are found through the primary key: a firing's id is
-- `<reminder id>.<due epoch second>`, so its ids sort together and in due order. The index
-- on (reminder_id, due_at) said the same thing again and cost an index entry on every claim
-- and, as no update of a firing is HOT, on every result.
DROP INDEX firings_reminder;
