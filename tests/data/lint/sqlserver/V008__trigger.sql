CREATE TRIGGER {schema}.tr_orders_audit ON {schema}.orders
AFTER UPDATE
AS
BEGIN
    SET NOCOUNT ON;
    INSERT INTO {schema}.order_audit (order_id, old_status, new_status, changed_at)
    SELECT d.id, d.status, i.status, SYSUTCDATETIME()
      FROM deleted d JOIN inserted i ON i.id = d.id
     WHERE d.status <> i.status;
END
GO
