CREATE OR REPLACE VIEW paid_orders AS
  SELECT o.id, o.customer_id, o.total FROM orders o WHERE o.status = 'paid';
CREATE EVENT IF NOT EXISTS purge_audit
  ON SCHEDULE EVERY 1 DAY
  DO DELETE FROM audit_events WHERE at < NOW() - INTERVAL 90 DAY;
