ALTER TABLE {schema}.customers ADD phone NVARCHAR(32) NULL
GO
