-- Built before we had Enterprise edition.
CREATE NONCLUSTERED INDEX ix_customers_name ON {schema}.customers (name)
GO
