ALTER TABLE {schema}.customers DROP CONSTRAINT IF EXISTS df_customers_phone
ALTER TABLE {schema}.customers DROP COLUMN phone
GO
