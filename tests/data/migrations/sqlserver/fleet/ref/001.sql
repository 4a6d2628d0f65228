create schema {schema};
GO
create table {schema}.roles (id integer primary key, name nvarchar(100) not null);
insert into {schema}.roles values (1, N'admin');
