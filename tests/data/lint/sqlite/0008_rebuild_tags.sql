-- The twelve-step rebuild: SQLite cannot change a column's constraints in place.
CREATE TABLE tags_new (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    color TEXT CHECK (color IS NULL OR length(color) = 7)
);
INSERT INTO tags_new (id, name) SELECT id, name FROM tags;
DROP TABLE tags;
ALTER TABLE tags_new RENAME TO tags;
