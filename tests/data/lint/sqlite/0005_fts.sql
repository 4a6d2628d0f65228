CREATE VIRTUAL TABLE notes_fts USING fts5(title, body, content='notes', content_rowid='id');
INSERT INTO notes_fts (rowid, title, body) SELECT id, title, body FROM notes;
