CREATE TRIGGER orders_after_update AFTER UPDATE ON orders
FOR EACH ROW
BEGIN
  IF NEW.status <> OLD.status THEN
    INSERT INTO audit_log (action, detail) VALUES ('status', CONCAT(OLD.id, ':', OLD.status, '->', NEW.status));
  END IF;
END;
