DROP TABLE journal_slots;
