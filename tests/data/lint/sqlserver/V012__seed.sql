SET IDENTITY_INSERT {schema}.customers ON;
INSERT INTO {schema}.customers (id, email, name) VALUES (1, N'ops@example.invalid', N'Operations');
SET IDENTITY_INSERT {schema}.customers OFF;
GO
