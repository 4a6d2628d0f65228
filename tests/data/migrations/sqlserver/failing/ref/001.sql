create schema {schema};
GO
create table {schema}.a (id integer);
