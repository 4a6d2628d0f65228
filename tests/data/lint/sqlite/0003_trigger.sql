CREATE TRIGGER notes_touch AFTER UPDATE OF title, body ON notes
FOR EACH ROW
BEGIN
    UPDATE notes SET updated_at = datetime('now') WHERE id = NEW.id;
END;
