create schema {schema};
create table {schema}.roles (id integer primary key, name text not null);
insert into {schema}.roles values (1, 'admin');
