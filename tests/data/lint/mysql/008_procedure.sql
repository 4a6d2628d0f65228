DROP PROCEDURE IF EXISTS close_stale_orders;
CREATE PROCEDURE close_stale_orders(IN days INT)
BEGIN
  DECLARE affected INT DEFAULT 0;
  UPDATE orders SET status = 'cancelled'
   WHERE status = 'new' AND placed_at < NOW() - INTERVAL days DAY;
  SET affected = ROW_COUNT();
  IF affected > 0 THEN
    INSERT INTO audit_log (action, detail) VALUES ('close_stale', CONCAT(affected, ' orders'));
  END IF;
END;
