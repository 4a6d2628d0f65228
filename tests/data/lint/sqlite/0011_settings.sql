CREATE TABLE IF NOT EXISTS settings (
    key TEXT PRIMARY KEY,
    value TEXT
) STRICT;
INSERT OR IGNORE INTO settings (key, value) VALUES ('theme', 'system'), ('sync', 'off');
