ALTER TABLE notes RENAME COLUMN body TO content;
