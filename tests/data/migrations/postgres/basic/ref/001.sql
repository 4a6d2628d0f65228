create schema {schema};
create table {schema}.countries (code text primary key, name text not null);
insert into {schema}.countries values ('DE', 'Germany'), ('PL', 'Poland');
