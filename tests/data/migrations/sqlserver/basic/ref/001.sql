create schema {schema};
GO
create table {schema}.countries (code char(2) primary key, name nvarchar(100) not null);
insert into {schema}.countries (code, name) values ('DE', N'Germany'), ('PL', N'Poland');
