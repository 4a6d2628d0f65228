CREATE NONCLUSTERED INDEX ix_orders_status ON {schema}.orders (status) INCLUDE (total)
    WITH (ONLINE = ON, SORT_IN_TEMPDB = ON)
GO
