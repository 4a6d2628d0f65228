CREATE VIEW IF NOT EXISTS pinned_notes AS
    SELECT id, title FROM notes WHERE pinned = 1 ORDER BY created_at DESC;
