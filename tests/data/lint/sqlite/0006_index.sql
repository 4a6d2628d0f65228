CREATE INDEX IF NOT EXISTS notes_pinned ON notes (pinned) WHERE pinned = 1;
