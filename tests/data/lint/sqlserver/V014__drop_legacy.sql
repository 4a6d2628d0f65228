IF OBJECT_ID(N'{schema}.legacy_import', N'U') IS NOT NULL
    DROP TABLE {schema}.legacy_import
GO
