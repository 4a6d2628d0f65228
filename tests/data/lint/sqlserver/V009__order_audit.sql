IF OBJECT_ID(N'{schema}.order_audit', N'U') IS NULL
BEGIN
    CREATE TABLE {schema}.order_audit (
        id BIGINT IDENTITY(1,1) PRIMARY KEY,
        order_id BIGINT NOT NULL,
        old_status TINYINT NULL,
        new_status TINYINT NOT NULL,
        changed_at DATETIME2 NOT NULL
    )
END
GO
