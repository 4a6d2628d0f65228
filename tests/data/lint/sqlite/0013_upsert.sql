INSERT INTO settings (key, value) VALUES ('schema_note', 'v13')
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;
