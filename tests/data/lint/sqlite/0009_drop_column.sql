ALTER TABLE notes DROP COLUMN updated_at;
