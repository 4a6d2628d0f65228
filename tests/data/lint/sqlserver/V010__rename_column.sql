EXEC sp_rename '{schema}.customers.name', 'full_name', 'COLUMN'
GO
