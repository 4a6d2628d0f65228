create database {schema};
create table {schema}.roles (id integer primary key, name varchar(50) not null);
insert into {schema}.roles values (1, 'admin');
