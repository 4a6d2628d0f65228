CREATE VIEW {schema}.v_open_orders
AS
SELECT o.id, o.customer_id, c.email, o.total
  FROM {schema}.orders o
  JOIN {schema}.customers c ON c.id = o.customer_id
 WHERE o.status = 0
GO
EXEC sp_rename '{schema}.order_audit', 'order_history'
GO
