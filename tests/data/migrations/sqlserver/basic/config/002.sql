create schema {schema};
GO
create table {schema}.settings (name nvarchar(64) primary key, value nvarchar(max) not null);
