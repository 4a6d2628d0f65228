ALTER TABLE settings RENAME TO preferences;
