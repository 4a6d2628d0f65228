CREATE TABLE {schema}.customers (
    id INT IDENTITY(1,1) NOT NULL CONSTRAINT pk_customers PRIMARY KEY,
    email NVARCHAR(255) NOT NULL,
    name NVARCHAR(120) NULL,
    created_at DATETIME2 NOT NULL CONSTRAINT df_customers_created DEFAULT SYSUTCDATETIME()
)
GO
CREATE UNIQUE NONCLUSTERED INDEX ux_customers_email ON {schema}.customers (email)
GO
